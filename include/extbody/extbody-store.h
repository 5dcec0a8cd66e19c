/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-store.h - the store that externalize writes parts to.
 *
 * Part of libextbody's public API; include <extbody/extbody.h>, which
 * includes every header of the API. */
#pragma once
#include <extbody/extbody-base.h>
#include <extbody/extbody-config.h>

G_BEGIN_DECLS

/**
 * SECTION:extbody-store
 * @title: Store
 * @short_description: the store that externalize writes parts to
 * @include: extbody/extbody.h
 */

/* ---- store (externalize) ----------------------------------------------------- */

/**
 * EbStore:
 *
 * Where `extbody externalize` puts the parts it takes out of messages: a
 * directory served by a web server under externalize_base_url, or a WebDAV
 * collection written with HTTP PUT (externalize_store). Objects are named by
 * the SHA-256 of their bytes, or with externalize_key by their HMAC-SHA256
 * keyed with it. A store may be shared by threads.
 */
typedef struct _EbStore EbStore;

/**
 * eb_store_new:
 * @config: the configuration (externalize_store, externalize_base_url,
 *   externalize_key, externalize_store_user, externalize_store_password,
 *   externalize_store_timeout, ca_file; read, not kept)
 * @error: return location for a #GError
 *
 * The store @config names. A directory must exist and externalize_base_url
 * must be set for it; a WebDAV store's objects are served under its own URL
 * unless externalize_base_url says otherwise. eb_init() must have been called.
 *
 * Returns: (transfer full) (nullable): the store, or NULL with
 *   %EB_ERROR_CONFIG when externalize_store is unset or unusable, or
 *   externalize_key is shorter than 32 bytes.
 */
EXTBODY_API EbStore *eb_store_new (const EbConfig *config, GError **error);

/**
 * eb_store_free:
 * @store: (nullable) (transfer full): a store
 *
 * Free @store, when no thread uses it any more.
 */
EXTBODY_API void eb_store_free (EbStore *store);

/**
 * eb_store_put:
 * @store: a store
 * @data: the bytes to store (the decoded part)
 * @sha256_hex: (nullable): the lowercase hex SHA-256 of @data, or NULL to
 *   have it computed; it is checked against @data either way
 * @error: return location for a #GError
 *
 * Store @data under its name (its SHA-256, or with externalize_key its
 * HMAC-SHA256), unless the store already holds exactly those bytes; read the
 * object back and check its size and name before answering. Thread-safe.
 *
 * Returns: (transfer full) (nullable): the URL a resolver fetches the object
 *   by (externalize_base_url, "/", the hex name), or NULL with %EB_ERROR_IO
 *   and a one-line message naming the store and the cause (an HTTP status, a
 *   libcurl error, an errno text, "read back 123 bytes, expected 456"); then
 *   no message may refer to the object.
 */
EXTBODY_API char *eb_store_put (EbStore *store, GBytes *data, const char *sha256_hex,
                                GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbStore, eb_store_free)

G_END_DECLS

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* params-old.h - the pre-issue-16 parameter parser and URL reassembly, renamed
 * (params-old.c): old_eb_params_* and old_eb_urlparam_*. Test-only. */
#pragma once
#include <glib.h>

typedef struct _OldEbParams OldEbParams;

OldEbParams *old_eb_params_parse (const char *raw, gsize len);
OldEbParams *old_eb_params_parse_only (const char *raw, gsize len, const char *const *only);
void old_eb_params_free (OldEbParams *params);
const char *old_eb_params_get_media_type (const OldEbParams *params);
const char *old_eb_params_get (const OldEbParams *params, const char *name, GError **error);
guint old_eb_params_get_n (const OldEbParams *params);
const char *old_eb_params_get_name_at (const OldEbParams *params, guint i);
const char * const *old_eb_params_get_warnings (const OldEbParams *params);
GBytes *old_eb_params_get_octets (const OldEbParams *params, const char *name, gboolean strip_lws,
                                  GError **error);
char *old_eb_params_content_type_media_type (const char *value);
char *old_eb_urlparam_reassemble (const char *raw, gsize len, GError **error);

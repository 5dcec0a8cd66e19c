/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-reason.c - the table of outcomes (see eb-reason.h). */
#include "eb-reason.h"

static const struct {
  EbReason    code;
  const char *token;
  const char *text;
} reasons[] = {
  { EB_REASON_RESOLVED,          "resolved",          "resolved" },
  { EB_REASON_ACCESS_TYPE,       "access-type",       "access-type not acted on" },
  { EB_REASON_NO_ACCESS_TYPE,    "no-access-type",    "access-type parameter missing" },
  { EB_REASON_BAD_ACCESS_TYPE,   "bad-access-type",   "access-type parameter unreadable" },
  { EB_REASON_URL_MISSING,       "url-missing",       "URL parameter missing" },
  { EB_REASON_URL_INVALID,       "url-invalid",       "URL parameter unusable" },
  { EB_REASON_SCHEME_DISABLED,   "scheme-disabled",   "scheme not enabled" },
  { EB_REASON_DATA_URL_INVALID,  "data-url-invalid",  "data: URL processor failed" },
  { EB_REASON_TYPE_MISMATCH,     "type-mismatch",     "content type disagrees" },
  { EB_REASON_BAD_INNER_HEADER,  "bad-inner-header",  "inner header unusable" },
  { EB_REASON_CTE_UNKNOWN,       "cte-unknown",       "unknown transfer encoding" },
  { EB_REASON_CTE_INVALID,       "cte-invalid",       "data does not decode under its transfer encoding" },
  { EB_REASON_PART_TOO_LARGE,    "part-too-large",    "data larger than max_part_bytes" },
  { EB_REASON_MESSAGE_BUDGET,    "message-budget",    "message over max_message_bytes of resolved data" },
  { EB_REASON_TOO_DEEP,          "too-deep",          "nested deeper than max_nesting_depth" },
  { EB_REASON_TOO_MANY_REFS,     "too-many-refs",     "more references than max_references" },
  { EB_REASON_TOO_MANY_PARTS,    "too-many-parts",    "message has more parts than max_parts" },
  { EB_REASON_MESSAGE_TOO_LARGE, "message-too-large", "message larger than max_message_size" },
  { EB_REASON_UNLOCATABLE,       "unlocatable",       "part boundaries could not be located exactly" },
  { EB_REASON_DUPLICATE_FIELD,   "duplicate-field",   "entity has more than one Content-Type field" },
  { EB_REASON_COMPOSITE_UNSAFE,  "composite-unsafe",  "multipart or message data cannot be inlined as 7bit" },
  { EB_REASON_UNPARSEABLE,       "unparseable",       "message could not be parsed" },
  { EB_REASON_REFUSED_ADDRESS,   "refused-address",   "fetch policy refused the address" },
  { EB_REASON_REFUSED_DOMAIN,    "refused-domain",    "fetch policy refused the host" },
  { EB_REASON_CREDENTIALS,       "credentials",       "URL carries credentials" },
  { EB_REASON_RATE_LIMITED,      "rate-limited",      "too many requests to the host" },
  { EB_REASON_TIMED_OUT,         "timed-out",         "fetch timed out" },
  { EB_REASON_HTTP_STATUS,       "http-status",       "server answered with a status other than 200" },
  { EB_REASON_TOO_MANY_REDIRECTS,"too-many-redirects","too many redirects" },
  { EB_REASON_FETCH_FAILED,      "fetch-failed",      "fetch failed" },
  { EB_REASON_EXPIRED,           "expired",           "reference expired and its data is gone" },
  { EB_REASON_CHECKSUM,          "checksum-mismatch", "data does not match Content-MD5" },
  { EB_REASON_SIZE_PARAM,        "size-too-large",    "size parameter above max_part_bytes" },
  { EB_REASON_INSECURE_REDIRECT, "insecure-redirect", "redirect from https to a scheme without TLS" },
  { EB_REASON_WOULD_FETCH,       "would-fetch",       "rewrite would fetch it; not fetched by inspect" },
  { EB_REASON_REFUSED_PATH,      "refused-path",      "local file outside local_file_dirs" },
  { EB_REASON_FETCH_OFF,         "fetch-off",         "fetching is off (fetch = off)" },
  { EB_REASON_LOCAL_FILE_DIRS,   "local-file-dirs",   "local-file references not enabled (local_file_dirs is empty)" },
  { EB_REASON_PARAM_MISSING,     "param-missing",     "a parameter the access-type needs is missing" },
  { EB_REASON_SIGNED,            "signed",            "inside a signed or encrypted part" },
  { EB_REASON_OUTER_CTE,         "outer-encoding",    "external-body part with a transfer encoding other than 7bit, 8bit or binary" },
  { EB_REASON_NESTED_REF,        "nested-reference",  "inner header is message/external-body again" },
  { EB_REASON_STORE_FAILED,      "store-failed",      "externalize: the store could not take the part" },
  { EB_REASON_WOULD_EXTERNALIZE, "would-externalize", "externalize would store the part; not stored (dry run)" },
  { EB_REASON_NOT_RETRIEVAL,     "not-retrieval",     "the URL retrieves nothing (RFC 2017 section 3)" },
  { EB_REASON_UNSUPPORTED_SCHEME,"unsupported-scheme","a retrieval scheme extbody has no client for" },
  { EB_REASON_NOT_DOCUMENT,      "not-document",      "the URL names a listing, menu or search, not a document" },
  { EB_REASON_FILE_REMOTE_HOST,  "file-remote-host",  "file URL naming a host other than localhost" },
  { EB_REASON_SEALED_RECORD,     "sealed-record",     "this site's sealed X-Extbody record: handled by an earlier pass" },
};

G_STATIC_ASSERT (G_N_ELEMENTS (reasons) == EB_REASON_N);

const char *
eb_reason_token (EbReason reason)
{
  g_return_val_if_fail (reason < EB_REASON_N, "unknown");
  return reasons[reason].token;
}

const char *
eb_reason_text (EbReason reason)
{
  g_return_val_if_fail (reason < EB_REASON_N, "unknown");
  return reasons[reason].text;
}

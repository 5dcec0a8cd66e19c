/* eb-reason.h - why a reference was resolved or left alone.
 *
 * A part left alone is data, not an error: every outcome is one row of a single
 * table (code, token, text), so the report, inspect, the log and the man page
 * speak with one voice. The token is stable and is what --json prints; the text
 * is for people.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  EB_REASON_RESOLVED = 0,      /* replaced by an ordinary part */
  EB_REASON_ACCESS_TYPE,       /* access-type other than URL: never acted on here */
  EB_REASON_NO_ACCESS_TYPE,    /* the access-type parameter is missing */
  EB_REASON_BAD_ACCESS_TYPE,   /* access-type present but ambiguous or malformed */
  EB_REASON_URL_MISSING,       /* access-type=URL without a URL parameter */
  EB_REASON_URL_INVALID,       /* the URL parameter cannot be reassembled unambiguously */
  EB_REASON_SCHEME_DISABLED,   /* the URL's scheme is not enabled */
  EB_REASON_DATA_URL_INVALID,  /* the data: URL processor returned failure */
  EB_REASON_TYPE_MISMATCH,     /* the data's content type disagrees with the inner header */
  EB_REASON_BAD_INNER_HEADER,  /* the inner (phantom) header cannot be used */
  EB_REASON_CTE_UNKNOWN,       /* the inner Content-Transfer-Encoding is unknown */
  EB_REASON_CTE_INVALID,       /* the data does not decode under the inner encoding */
  EB_REASON_PART_TOO_LARGE,    /* decoded data above max_part_bytes */
  EB_REASON_MESSAGE_BUDGET,    /* decoded data of the message above max_message_bytes */
  EB_REASON_TOO_DEEP,          /* nested deeper than max_nesting_depth */
  EB_REASON_TOO_MANY_REFS,     /* more references than max_references */
  EB_REASON_TOO_MANY_PARTS,    /* the message has more parts than max_parts */
  EB_REASON_MESSAGE_TOO_LARGE, /* the message is above max_message_size */
  EB_REASON_UNLOCATABLE,       /* the part's bytes could not be located exactly */
  EB_REASON_DUPLICATE_FIELD,   /* the entity has two Content-Type fields */
  EB_REASON_COMPOSITE_UNSAFE,  /* multipart or message data that cannot go out as 7bit safely */
  EB_REASON_UNPARSEABLE,       /* GMime could not parse the message */
  EB_REASON_REFUSED_ADDRESS,   /* the fetch policy refused the address connected to */
  EB_REASON_REFUSED_DOMAIN,    /* allow_domains / deny_domains refused the host */
  EB_REASON_CREDENTIALS,       /* the URL carries a user name or password */
  EB_REASON_RATE_LIMITED,      /* max_requests_per_host reached for the host */
  EB_REASON_TIMED_OUT,         /* a fetch or the message deadline ran out */
  EB_REASON_HTTP_STATUS,       /* the server answered with a status other than 2xx */
  EB_REASON_TOO_MANY_REDIRECTS,/* more redirects than max_redirects */
  EB_REASON_FETCH_FAILED,      /* the fetch failed otherwise (DNS, connection, TLS, ...) */
  EB_REASON_EXPIRED,           /* the expiration parameter is in the past */
  EB_REASON_CHECKSUM,          /* the data does not match the inner Content-MD5 */
  EB_REASON_SIZE_PARAM,        /* the size parameter announces more than max_part_bytes */
  EB_REASON_INSECURE_REDIRECT, /* a redirect from https to a scheme without TLS */
  EB_REASON_WOULD_FETCH,       /* inspect: rewrite would fetch it (inspect --fetch does) */
  EB_REASON_REFUSED_PATH,      /* local-file outside local_file_dirs, or not a regular file */
  EB_REASON_FETCH_OFF,         /* a reference that would be fetched, with fetch = off */
  EB_REASON_LOCAL_FILE_DIRS,   /* access-type=local-file, with local_file_dirs empty */
  EB_REASON_PARAM_MISSING,     /* a parameter the access-type needs is missing (site, name) */
  EB_REASON_SIGNED,            /* inside a signed or encrypted entity: resolving would break it */
  EB_REASON_OUTER_CTE,         /* the external-body entity has a transfer encoding RFC 2046 forbids */
  EB_REASON_NESTED_REF,        /* the phantom header's type is message/external-body again */
  EB_REASON_N
} EbReason;

/* (transfer none): stable token, e.g. "scheme-disabled". */
const char *eb_reason_token (EbReason reason);
/* (transfer none): one-line text for people, e.g. "scheme not enabled". */
const char *eb_reason_text (EbReason reason);

G_END_DECLS

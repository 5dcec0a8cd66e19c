/* eb-error.h - the EB_ERROR domain: failures a caller acts on.
 *
 * A part that is left alone is not an error (see eb-reason.h); these codes are
 * for functions that cannot produce their result at all.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

#define EB_ERROR (eb_error_quark ())
GQuark eb_error_quark (void);

typedef enum {
  EB_ERROR_FAILED,          /* anything else */
  EB_ERROR_SYNTAX,          /* input does not follow the grammar */
  EB_ERROR_AMBIGUOUS,       /* more than one reading; extbody never guesses */
  EB_ERROR_MISSING,         /* a required element is absent */
  EB_ERROR_EMPTY,           /* a value is present but empty */
  EB_ERROR_ENCODED_WORD,    /* an RFC 2047 encoded-word where none may be */
  EB_ERROR_DATA_URL,        /* the WHATWG data: URL processor returned failure */
  EB_ERROR_LIMIT,           /* a configured limit was reached */
  EB_ERROR_IO,              /* reading or writing failed */
  EB_ERROR_CONFIG,          /* the configuration is invalid */
} EbError;

G_END_DECLS

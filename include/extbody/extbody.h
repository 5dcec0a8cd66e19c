/* extbody.h - the public API of libextbody.
 *
 * Everything a program linking libextbody may use is declared here (and in the
 * headers this one includes); every other symbol of the library is hidden.
 * Types are opaque, read through accessors.
 */
#pragma once
#include <gio/gio.h>

#if defined(EXTBODY_COMPILATION) && defined(__GNUC__)
#  define EXTBODY_API __attribute__ ((visibility ("default")))
#else
#  define EXTBODY_API
#endif

G_BEGIN_DECLS

/* Sections are added by module: configuration, reasons, fetcher, rewrite,
 * inspect, batch and statistics. */

G_END_DECLS

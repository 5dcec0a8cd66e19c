/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-msg.h - a test message written once, with "\n" line breaks, in the
 * line ending a case asks for (LF, CRLF), for the unit tests. */
#pragma once

#include <glib.h>

/* @tmpl with every "\n" turned into @eol. Returns: (transfer full). */
GByteArray *test_msg_with_eol (const char *tmpl, const char *eol);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-edits.h - a rewrite plan's header edits applied as a milter applies
 * them, for the unit tests.
 *
 * A milter cannot write a new header: it changes, deletes and adds fields
 * (eb_plan_header_edits) and replaces the body (eb_plan_write_body).
 * test_edits_assert_as_written() applies the edits of @r to the fields of the
 * message @m (a changed or deleted field is the edit's index-th of its name;
 * an added one goes at the end) and asserts the result holds the same fields
 * (name and value, compared sorted, since a milter cannot reorder them) and
 * the same body bytes as @want, the message eb_plan_write() wrote for @r.
 * With @drop_filter_field the X-Extbody field is left out of @want's fields
 * first (the milter adds it itself). Fails the running GLib test otherwise.
 */
#pragma once

#include <glib.h>
#include "eb-rewrite.h"

void test_edits_assert_as_written (EbPlan *r, const char *m, gsize len,
                                   const char *want, gsize want_len, gboolean drop_filter_field);

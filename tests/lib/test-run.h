/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-run.h - one message rewritten in process (eb_rewrite, no fetcher):
 * what it wrote and its plan, for the unit tests. */
#pragma once

#include <glib.h>
#include "eb-rewrite.h"

typedef struct {
  GByteArray *out;      /* the message eb_rewrite() wrote */
  EbPlan     *result;   /* its plan */
} TestRun;

void test_run_clear (TestRun *r);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (TestRun, test_run_clear)

/* Rewrite @in with @config and @flags into @r (empty before); fails the
 * running GLib test unless eb_rewrite() succeeds. */
void test_run_rewrite (GByteArray *in, const EbConfig *config, EbRewriteFlags flags, TestRun *r);

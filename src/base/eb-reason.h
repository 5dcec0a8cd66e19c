/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-reason.h - why a reference was resolved or left alone.
 *
 * A part left alone is data, not an error: every outcome is one row of a single
 * table (code, token, text), so the report, inspect, the log and the man page
 * speak with one voice. The token is stable and is what --json prints; the text
 * is for people. EbReason, eb_reason_token() and eb_reason_text() are public
 * (extbody.h).
 */
#pragma once
#include <extbody/extbody.h>

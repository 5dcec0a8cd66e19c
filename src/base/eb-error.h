/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-error.h - the EB_ERROR domain: failures a caller acts on.
 *
 * A part that is left alone is not an error (see eb-reason.h); these codes are
 * for functions that cannot produce their result at all. The domain and its
 * codes are public (extbody.h).
 */
#pragma once
#include <extbody/extbody.h>

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-profile.h - the named profiles of a message (in transit, at rest, given
 * by hand) and the flags of their plans. EbProfile and its functions are
 * public (extbody-plan.h). */
#pragma once
#include <extbody/extbody.h>
#include "eb-config.h"

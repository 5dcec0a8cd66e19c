/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-error.c - the EB_ERROR domain */
#include "eb-error.h"

G_DEFINE_QUARK (extbody-error-quark, eb_error)

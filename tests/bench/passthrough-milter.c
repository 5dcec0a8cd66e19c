/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* passthrough-milter.c - the floor the milter protocol itself costs: a libmilter
 * milter that asks for the same actions and steps as extbodyd, reads every
 * header and body chunk, and changes nothing. Built for tests/bench/bench-milter.py.
 *
 *   passthrough-milter SOCKET [--nodelay]
 */
#include <libmilter/mfapi.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

static sfsistat
negotiate (SMFICTX *ctx, unsigned long f0, unsigned long f1, unsigned long f2, unsigned long f3,
           unsigned long *pf0, unsigned long *pf1, unsigned long *pf2, unsigned long *pf3)
{
  *pf0 = SMFIF_CHGBODY | SMFIF_CHGHDRS | SMFIF_ADDHDRS;
  *pf1 = (SMFIP_NOCONNECT | SMFIP_NOHELO | SMFIP_NORCPT | SMFIP_NOUNKNOWN | SMFIP_NODATA) & f1;
  *pf2 = *pf3 = 0;
  return SMFIS_CONTINUE;
}

static sfsistat envfrom (SMFICTX *ctx, char **argv) { return SMFIS_CONTINUE; }
static sfsistat header (SMFICTX *ctx, char *n, char *v) { return SMFIS_CONTINUE; }
static sfsistat eoh (SMFICTX *ctx) { return SMFIS_CONTINUE; }
static sfsistat body (SMFICTX *ctx, unsigned char *b, size_t l) { return SMFIS_CONTINUE; }
static sfsistat eom (SMFICTX *ctx) { return SMFIS_CONTINUE; }
static sfsistat abort_cb (SMFICTX *ctx) { return SMFIS_CONTINUE; }
static sfsistat close_cb (SMFICTX *ctx) { return SMFIS_CONTINUE; }

static struct smfiDesc desc = {
  "passthrough", SMFI_VERSION, SMFIF_CHGBODY | SMFIF_CHGHDRS | SMFIF_ADDHDRS,
  NULL, NULL, envfrom, NULL, header, eoh, body, eom, abort_cb, close_cb, NULL, NULL, negotiate,
};

int
main (int argc, char **argv)
{
  if (argc < 2)
    return 64;
  smfi_setconn (argv[1]);
  smfi_register (desc);
  mode_t old = umask (0);
  if (smfi_opensocket (1) != MI_SUCCESS)
    return 69;
  umask (old);
  if (argc > 2 && strcmp (argv[2], "--nodelay") == 0)
    for (int fd = 3; fd < 1024; fd++) {
      int one = 1, listening = 0;
      socklen_t l = sizeof listening;
      if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) == 0 && listening)
        setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
  return smfi_main () == MI_SUCCESS ? 0 : 70;
}

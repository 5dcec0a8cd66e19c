/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-policy.c - address classes (every range, inside and just outside its
 * edges), IPv4 embedded in IPv6, the textual forms an attacker writes, cloud
 * metadata addresses, allow/deny precedence, ports, own addresses, CIDR and list
 * parsing with exact error codes. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <string.h>
#include <sys/un.h>
#include "eb-error.h"
#include "eb-list.h"
#include "eb-policy.h"

#define SA(ss) ((const struct sockaddr *) &(ss))

/* A sockaddr from a strict numeric address (inet_pton). */
static void
sa_from_text (const char *text, guint16 port, struct sockaddr_storage *ss)
{
  memset (ss, 0, sizeof *ss);
  struct sockaddr_in *sin = (struct sockaddr_in *) ss;
  struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) ss;
  if (inet_pton (AF_INET, text, &sin->sin_addr) == 1) {
    sin->sin_family = AF_INET;
    sin->sin_port = htons (port);
  } else if (inet_pton (AF_INET6, text, &sin6->sin6_addr) == 1) {
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons (port);
  } else {
    g_error ("bad test address %s", text);
  }
}

static char *
sa_to_text (const struct sockaddr *sa)
{
  char buf[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET)
    inet_ntop (AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, buf, sizeof buf);
  else
    inet_ntop (AF_INET6, &((const struct sockaddr_in6 *) sa)->sin6_addr, buf, sizeof buf);
  return g_strdup (buf);
}

static EbCidr
cidr (const char *text)
{
  EbCidr c;
  g_autoptr (GError) error = NULL;
  gboolean ok = eb_policy_cidr_parse (text, &c, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  return c;
}

static EbPolicyVerdict
check (const EbPolicy *p, const char *addr, guint16 port, EbPolicyDecision *d, char **why)
{
  struct sockaddr_storage ss;
  sa_from_text (addr, port, &ss);
  EbPolicyDecision local;
  return eb_policy_decide (p, SA (ss), d ? d : &local, why);
}

/* ---- Classes: every range, inside and just outside ------------------------- */

typedef struct {
  const char *addr;
  EbAddrClass cls;
  gboolean    allowed;   /* by the default policy, port 443 */
} ClassCase;

#define G EB_ADDR_GLOBAL
static const ClassCase v4_cases[] = {
  /* 0.0.0.0/8 */
  { "0.0.0.0", EB_ADDR_UNSPECIFIED, FALSE }, { "0.255.255.255", EB_ADDR_UNSPECIFIED, FALSE },
  { "1.0.0.0", G, TRUE },
  /* 10/8 */
  { "9.255.255.255", G, TRUE }, { "10.0.0.0", EB_ADDR_PRIVATE, FALSE },
  { "10.255.255.255", EB_ADDR_PRIVATE, FALSE }, { "11.0.0.0", G, TRUE },
  /* 100.64/10 */
  { "100.63.255.255", G, TRUE }, { "100.64.0.0", EB_ADDR_SHARED, FALSE },
  { "100.127.255.255", EB_ADDR_SHARED, FALSE }, { "100.128.0.0", G, TRUE },
  { "100.100.100.199", EB_ADDR_SHARED, FALSE }, { "100.100.100.200", EB_ADDR_METADATA, FALSE },
  { "100.100.100.201", EB_ADDR_SHARED, FALSE },
  /* 127/8 */
  { "126.255.255.255", G, TRUE }, { "127.0.0.0", EB_ADDR_LOOPBACK, FALSE },
  { "127.0.0.1", EB_ADDR_LOOPBACK, FALSE }, { "127.255.255.255", EB_ADDR_LOOPBACK, FALSE },
  { "128.0.0.0", G, TRUE },
  /* 169.254/16 */
  { "169.253.255.255", G, TRUE }, { "169.254.0.0", EB_ADDR_LINK_LOCAL, FALSE },
  { "169.254.255.255", EB_ADDR_LINK_LOCAL, FALSE }, { "169.255.0.0", G, TRUE },
  { "169.254.169.253", EB_ADDR_LINK_LOCAL, FALSE }, { "169.254.169.254", EB_ADDR_METADATA, FALSE },
  { "169.254.169.255", EB_ADDR_LINK_LOCAL, FALSE }, { "169.254.170.2", EB_ADDR_METADATA, FALSE },
  /* 172.16/12 */
  { "172.15.255.255", G, TRUE }, { "172.16.0.0", EB_ADDR_PRIVATE, FALSE },
  { "172.31.255.255", EB_ADDR_PRIVATE, FALSE }, { "172.32.0.0", G, TRUE },
  /* 192.0.0.0/24 */
  { "191.255.255.255", G, TRUE }, { "192.0.0.0", EB_ADDR_IETF_PROTOCOL, FALSE },
  { "192.0.0.9", EB_ADDR_IETF_PROTOCOL, FALSE }, { "192.0.0.191", EB_ADDR_IETF_PROTOCOL, FALSE },
  { "192.0.0.192", EB_ADDR_METADATA, FALSE }, { "192.0.0.193", EB_ADDR_IETF_PROTOCOL, FALSE },
  { "192.0.0.255", EB_ADDR_IETF_PROTOCOL, FALSE }, { "192.0.1.0", G, TRUE },
  /* 192.0.2/24 */
  { "192.0.1.255", G, TRUE }, { "192.0.2.0", EB_ADDR_DOCUMENTATION, FALSE },
  { "192.0.2.255", EB_ADDR_DOCUMENTATION, FALSE }, { "192.0.3.0", G, TRUE },
  /* 192.88.99/24 */
  { "192.88.98.255", G, TRUE }, { "192.88.99.0", EB_ADDR_6TO4_RELAY, FALSE },
  { "192.88.99.255", EB_ADDR_6TO4_RELAY, FALSE }, { "192.88.100.0", G, TRUE },
  /* 192.168/16 */
  { "192.167.255.255", G, TRUE }, { "192.168.0.0", EB_ADDR_PRIVATE, FALSE },
  { "192.168.255.255", EB_ADDR_PRIVATE, FALSE }, { "192.169.0.0", G, TRUE },
  /* 198.18/15 */
  { "198.17.255.255", G, TRUE }, { "198.18.0.0", EB_ADDR_BENCHMARKING, FALSE },
  { "198.19.255.255", EB_ADDR_BENCHMARKING, FALSE }, { "198.20.0.0", G, TRUE },
  /* 198.51.100/24 */
  { "198.51.99.255", G, TRUE }, { "198.51.100.0", EB_ADDR_DOCUMENTATION, FALSE },
  { "198.51.100.255", EB_ADDR_DOCUMENTATION, FALSE }, { "198.51.101.0", G, TRUE },
  /* 203.0.113/24 */
  { "203.0.112.255", G, TRUE }, { "203.0.113.0", EB_ADDR_DOCUMENTATION, FALSE },
  { "203.0.113.255", EB_ADDR_DOCUMENTATION, FALSE }, { "203.0.114.0", G, TRUE },
  /* 224/4, 240/4, broadcast */
  { "223.255.255.255", G, TRUE }, { "224.0.0.0", EB_ADDR_MULTICAST, FALSE },
  { "239.255.255.255", EB_ADDR_MULTICAST, FALSE }, { "240.0.0.0", EB_ADDR_RESERVED, FALSE },
  { "255.255.255.254", EB_ADDR_RESERVED, FALSE }, { "255.255.255.255", EB_ADDR_BROADCAST, FALSE },
  /* Azure WireServer: a global address, refused as metadata */
  { "168.63.129.15", G, TRUE }, { "168.63.129.16", EB_ADDR_METADATA, FALSE },
  { "168.63.129.17", G, TRUE },
  /* ordinary global unicast */
  { "93.184.216.34", G, TRUE }, { "8.8.8.8", G, TRUE }, { "1.1.1.1", G, TRUE },
  { "223.255.255.254", G, TRUE },
};

#define F "ffff:ffff:ffff:ffff:ffff:ffff"
static const ClassCase v6_cases[] = {
  { "::", EB_ADDR_UNSPECIFIED, FALSE },
  { "::1", EB_ADDR_LOOPBACK, FALSE },
  /* ::/96 IPv4-compatible: refused whatever it embeds */
  { "::2", EB_ADDR_IPV4_COMPATIBLE, FALSE }, { "::8.8.8.8", EB_ADDR_IPV4_COMPATIBLE, FALSE },
  { "::255.255.255.255", EB_ADDR_IPV4_COMPATIBLE, FALSE }, { "::1:0:0", EB_ADDR_RESERVED, FALSE },
  /* ::ffff:0:0/96 IPv4-mapped: the embedded address decides */
  { "::fffe:ffff:ffff", EB_ADDR_RESERVED, FALSE }, { "::ffff:0.0.0.0", EB_ADDR_IPV4_MAPPED, FALSE },
  { "::ffff:8.8.8.8", EB_ADDR_IPV4_MAPPED, TRUE }, { "::ffff:10.0.0.1", EB_ADDR_IPV4_MAPPED, FALSE },
  { "::ffff:255.255.255.255", EB_ADDR_IPV4_MAPPED, FALSE }, { "::1:0:0:0", EB_ADDR_RESERVED, FALSE },
  { "::ffff:0:8.8.8.8", EB_ADDR_RESERVED, FALSE },  /* SIIT IPv4-translated: not routed */
  /* 64:ff9b::/96 NAT64: the embedded address decides */
  { "64:ff9a:" F, EB_ADDR_RESERVED, FALSE }, { "64:ff9b::", EB_ADDR_NAT64, FALSE },
  { "64:ff9b::808:808", EB_ADDR_NAT64, TRUE }, { "64:ff9b::7f00:1", EB_ADDR_NAT64, FALSE },
  { "64:ff9b::ffff:ffff", EB_ADDR_NAT64, FALSE }, { "64:ff9b::1:0:0", EB_ADDR_RESERVED, FALSE },
  { "64:ff9b:0:ffff::", EB_ADDR_RESERVED, FALSE },
  /* 64:ff9b:1::/48 NAT64 local use: refused */
  { "64:ff9b:1::", EB_ADDR_NAT64_LOCAL, FALSE }, { "64:ff9b:1::808:808", EB_ADDR_NAT64_LOCAL, FALSE },
  { "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", EB_ADDR_NAT64_LOCAL, FALSE },
  { "64:ff9b:2::", EB_ADDR_RESERVED, FALSE }, { "64:ff9b:0:ffff:ffff:ffff:ffff:ffff", EB_ADDR_RESERVED, FALSE },
  /* 100::/64 discard */
  { "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", EB_ADDR_RESERVED, FALSE }, { "100::", EB_ADDR_DISCARD, FALSE },
  { "100::ffff:ffff:ffff:ffff", EB_ADDR_DISCARD, FALSE }, { "100:0:0:1::", EB_ADDR_RESERVED, FALSE },
  /* 2000::/3 global, the rest reserved */
  { "1fff:" F ":ffff", EB_ADDR_RESERVED, FALSE }, { "2000::", G, TRUE },
  { "3fff:ffff:" F, G, TRUE }, { "4000::", EB_ADDR_RESERVED, FALSE }, { "5f00::1", EB_ADDR_RESERVED, FALSE },
  /* 2001::/32 Teredo: the client address (inverted) decides */
  { "2000:ffff:" F, G, TRUE },
  { "2001::", EB_ADDR_TEREDO, FALSE },                                     /* client 255.255.255.255 */
  { "2001:0:4136:e378:8000:63bf:f7f7:f7f7", EB_ADDR_TEREDO, TRUE },        /* client 8.8.8.8 */
  { "2001:0:4136:e378:8000:63bf:3fff:fdd2", EB_ADDR_TEREDO, FALSE },       /* client 192.0.2.45 */
  { "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", EB_ADDR_TEREDO, FALSE },       /* client 0.0.0.0 */
  /* 2001::/23 IETF protocol assignments, with its inner blocks */
  { "2001:1::", EB_ADDR_IETF_PROTOCOL, FALSE }, { "2001:1::1", EB_ADDR_IETF_PROTOCOL, FALSE },
  { "2001:1:" F, EB_ADDR_IETF_PROTOCOL, FALSE },
  { "2001:2::", EB_ADDR_BENCHMARKING, FALSE }, { "2001:2:0:ffff:ffff:ffff:ffff:ffff", EB_ADDR_BENCHMARKING, FALSE },
  { "2001:2:1::", EB_ADDR_IETF_PROTOCOL, FALSE },
  { "2001:f:" F, EB_ADDR_IETF_PROTOCOL, FALSE }, { "2001:10::", EB_ADDR_ORCHID, FALSE },
  { "2001:1f:" F, EB_ADDR_ORCHID, FALSE }, { "2001:20::", EB_ADDR_ORCHID, FALSE },
  { "2001:2f:" F, EB_ADDR_ORCHID, FALSE }, { "2001:30::", EB_ADDR_IETF_PROTOCOL, FALSE },
  { "2001:1ff:" F, EB_ADDR_IETF_PROTOCOL, FALSE }, { "2001:200::", G, TRUE },
  /* 2001:db8::/32 documentation */
  { "2001:db7:" F, G, TRUE }, { "2001:db8::", EB_ADDR_DOCUMENTATION, FALSE },
  { "2001:db8:" F, EB_ADDR_DOCUMENTATION, FALSE }, { "2001:db9::", G, TRUE },
  /* 2002::/16 6to4: the embedded address decides */
  { "2001:ffff:" F, G, TRUE }, { "2002::", EB_ADDR_6TO4, FALSE },
  { "2002:808:808::", EB_ADDR_6TO4, TRUE }, { "2002:808:808:1:2:3:4:5", EB_ADDR_6TO4, TRUE },
  { "2002:7f00:1::", EB_ADDR_6TO4, FALSE }, { "2002:ffff:" F, EB_ADDR_6TO4, FALSE },
  { "2003::", G, TRUE },
  /* 3fff::/20 documentation */
  { "3ffe:ffff:" F, G, TRUE }, { "3fff::", EB_ADDR_DOCUMENTATION, FALSE },
  { "3fff:fff:" F, EB_ADDR_DOCUMENTATION, FALSE }, { "3fff:1000::", G, TRUE },
  /* fc00::/7 unique local, with the AWS IMDS address */
  { "fbff:ffff:" F, EB_ADDR_RESERVED, FALSE }, { "fc00::", EB_ADDR_UNIQUE_LOCAL, FALSE },
  { "fdff:ffff:" F, EB_ADDR_UNIQUE_LOCAL, FALSE }, { "fe00::", EB_ADDR_RESERVED, FALSE },
  { "fd00:ec2::253", EB_ADDR_UNIQUE_LOCAL, FALSE }, { "fd00:ec2::254", EB_ADDR_METADATA, FALSE },
  { "fd00:ec2::255", EB_ADDR_UNIQUE_LOCAL, FALSE },
  /* fe80::/10, fec0::/10, ff00::/8 */
  { "fe7f:ffff:" F, EB_ADDR_RESERVED, FALSE }, { "fe80::", EB_ADDR_LINK_LOCAL, FALSE },
  { "febf:ffff:" F, EB_ADDR_LINK_LOCAL, FALSE }, { "fec0::", EB_ADDR_SITE_LOCAL, FALSE },
  { "feff:ffff:" F, EB_ADDR_SITE_LOCAL, FALSE }, { "ff00::", EB_ADDR_MULTICAST, FALSE },
  { "ff02::1", EB_ADDR_MULTICAST, FALSE }, { "ffff:ffff:" F, EB_ADDR_MULTICAST, FALSE },
  /* ordinary global unicast */
  { "2606:2800:220:1:248:1893:25c8:1946", G, TRUE }, { "2a00:1450:4001:80b::200e", G, TRUE },
};
#undef F
#undef G

static void
test_classify (gconstpointer data)
{
  const ClassCase *c = data;
  g_autoptr (EbPolicy) p = eb_policy_new ();
  struct sockaddr_storage ss;
  sa_from_text (c->addr, 443, &ss);
  g_assert_cmpstr (eb_policy_addr_class_token (eb_policy_addr_classify (SA (ss))), ==, eb_policy_addr_class_token (c->cls));

  EbPolicyDecision d;
  g_autofree char *why = NULL;
  EbPolicyVerdict v = eb_policy_decide (p, SA (ss), &d, &why);
  g_test_message ("%s: %s", c->addr, why);
  g_assert_cmpint (v, ==, c->allowed ? EB_POLICY_ALLOWED : EB_POLICY_REFUSED);
  g_assert_cmpint (d.rule, ==, c->allowed ? EB_POLICY_RULE_DEFAULT : EB_POLICY_RULE_ADDRESS_CLASS);
  g_assert_cmpint (d.addr_class, ==, c->cls);
  g_assert_true (g_str_has_prefix (why, c->allowed ? "allowed address " : "refused address "));
  /* the port does not change a class verdict, and port 0 is not checked */
  sa_from_text (c->addr, 0, &ss);
  g_assert_cmpint (eb_policy_check (p, SA (ss), NULL), ==, v);
}

/* ---- IPv4 embedded in IPv6 --------------------------------------------------- */

typedef struct {
  const char *name;
  const char *addr;
  const char *v4;           /* embedded address, or NULL */
  EbAddrClass reason;       /* the class the reason names */
  gboolean    allowed;
  const char *why;          /* exact reason, port 443, or NULL */
} EmbedCase;

static const EmbedCase embed_cases[] = {
  { "mapped-loopback", "::ffff:127.0.0.1", "127.0.0.1", EB_ADDR_LOOPBACK, FALSE,
    "refused address ::ffff:127.0.0.1: loopback (IPv4 127.0.0.1 inside IPv4-mapped IPv6)" },
  { "compatible-loopback", "::127.0.0.1", "127.0.0.1", EB_ADDR_LOOPBACK, FALSE,
    "refused address ::127.0.0.1: loopback (IPv4 127.0.0.1 inside deprecated IPv4-compatible IPv6)" },
  { "nat64-loopback", "64:ff9b::7f00:1", "127.0.0.1", EB_ADDR_LOOPBACK, FALSE,
    "refused address 64:ff9b::7f00:1: loopback (IPv4 127.0.0.1 inside NAT64 well-known prefix)" },
  { "nat64-local-loopback", "64:ff9b:1::7f00:1", "127.0.0.1", EB_ADDR_LOOPBACK, FALSE, NULL },
  { "6to4-loopback", "2002:7f00:1::", "127.0.0.1", EB_ADDR_LOOPBACK, FALSE,
    "refused address 2002:7f00:1::: loopback (IPv4 127.0.0.1 inside 6to4)" },
  { "6to4-loopback-with-host", "2002:7f00:1:1::1", "127.0.0.1", EB_ADDR_LOOPBACK, FALSE, NULL },
  { "teredo-loopback", "2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1", EB_ADDR_LOOPBACK, FALSE,
    "refused address 2001:0:4136:e378:8000:63bf:80ff:fffe: loopback (IPv4 127.0.0.1 inside Teredo)" },
  { "teredo-server-ignored", "2001:0:7f00:1:8000:63bf:f7f7:f7f7", "8.8.8.8", EB_ADDR_TEREDO, TRUE, NULL },
  { "mapped-metadata", "::ffff:169.254.169.254", "169.254.169.254", EB_ADDR_METADATA, FALSE, NULL },
  { "nat64-metadata", "64:ff9b::a9fe:a9fe", "169.254.169.254", EB_ADDR_METADATA, FALSE, NULL },
  { "6to4-metadata", "2002:a9fe:a9fe::", "169.254.169.254", EB_ADDR_METADATA, FALSE, NULL },
  { "teredo-metadata", "2001:0:4136:e378:8000:63bf:5601:5601", "169.254.169.254", EB_ADDR_METADATA, FALSE, NULL },
  { "mapped-private", "::ffff:10.1.2.3", "10.1.2.3", EB_ADDR_PRIVATE, FALSE, NULL },
  { "nat64-private", "64:ff9b::c0a8:101", "192.168.1.1", EB_ADDR_PRIVATE, FALSE, NULL },
  { "6to4-shared", "2002:6440:1::", "100.64.0.1", EB_ADDR_SHARED, FALSE, NULL },
  { "mapped-unspecified", "::ffff:0.0.0.0", "0.0.0.0", EB_ADDR_UNSPECIFIED, FALSE, NULL },
  { "mapped-broadcast", "::ffff:255.255.255.255", "255.255.255.255", EB_ADDR_BROADCAST, FALSE, NULL },
  { "compatible-global", "::8.8.8.8", "8.8.8.8", EB_ADDR_IPV4_COMPATIBLE, FALSE,
    "refused address ::8.8.8.8: deprecated IPv4-compatible IPv6" },
  { "nat64-local-global", "64:ff9b:1::808:808", "8.8.8.8", EB_ADDR_NAT64_LOCAL, FALSE,
    "refused address 64:ff9b:1::808:808: NAT64 local-use prefix" },
  { "mapped-global", "::ffff:8.8.8.8", "8.8.8.8", EB_ADDR_IPV4_MAPPED, TRUE,
    "allowed address ::ffff:8.8.8.8 port 443: global unicast (IPv4 8.8.8.8 inside IPv4-mapped IPv6)" },
  { "nat64-global", "64:ff9b::808:808", "8.8.8.8", EB_ADDR_NAT64, TRUE, NULL },
  { "6to4-global", "2002:808:808::1", "8.8.8.8", EB_ADDR_6TO4, TRUE, NULL },
  { "teredo-global", "2001:0:4136:e378:8000:63bf:f7f7:f7f7", "8.8.8.8", EB_ADDR_TEREDO, TRUE, NULL },
  { "none-documentation", "2001:db8::7f00:1", NULL, EB_ADDR_DOCUMENTATION, FALSE, NULL },
  { "none-global", "2606:2800:220:1:248:1893:7f00:1", NULL, EB_ADDR_GLOBAL, TRUE, NULL },
  { "none-unspecified", "::", NULL, EB_ADDR_UNSPECIFIED, FALSE, NULL },
  { "none-loopback", "::1", NULL, EB_ADDR_LOOPBACK, FALSE, NULL },
  { "none-ipv4", "127.0.0.1", NULL, EB_ADDR_LOOPBACK, FALSE, "refused address 127.0.0.1: loopback" },
};

static void
test_embedded (gconstpointer data)
{
  const EmbedCase *c = data;
  g_autoptr (EbPolicy) p = eb_policy_new ();
  struct sockaddr_storage ss;
  sa_from_text (c->addr, 443, &ss);

  struct in_addr v4 = { 0 };
  gboolean has = eb_policy_addr_embedded_ipv4 (SA (ss), &v4);
  g_assert_cmpint (has, ==, c->v4 != NULL);
  if (c->v4) {
    char buf[INET_ADDRSTRLEN];
    g_assert_cmpstr (inet_ntop (AF_INET, &v4, buf, sizeof buf), ==, c->v4);
  }

  EbPolicyDecision d;
  g_autofree char *why = NULL;
  EbPolicyVerdict v = eb_policy_decide (p, SA (ss), &d, &why);
  g_test_message ("%s", why);
  g_assert_cmpint (v, ==, c->allowed ? EB_POLICY_ALLOWED : EB_POLICY_REFUSED);
  g_assert_cmpint (d.has_embedded, ==, has);
  if (!has)
    g_assert_cmpint (d.embedded_class, ==, EB_ADDR_N);
  g_assert_cmpstr (eb_policy_addr_class_token (d.reason_class), ==, eb_policy_addr_class_token (c->reason));
  if (c->why)
    g_assert_cmpstr (why, ==, c->why);
}

/* ---- The textual forms an attacker writes ------------------------------------- */

typedef struct {
  const char *text;    /* as written in a URL's host */
  const char *addr;    /* what glibc makes of it */
} AttackCase;

static const AttackCase attack_cases[] = {
  /* legacy IPv4 forms (inet_aton): hex, octal, fewer parts, one number */
  { "0x7f.1", "127.0.0.1" },
  { "2130706433", "127.0.0.1" },
  { "017700000001", "127.0.0.1" },
  { "127.1", "127.0.0.1" },
  { "127.0.1", "127.0.0.1" },
  { "0177.0.0.1", "127.0.0.1" },
  { "0x7f.0.0.1", "127.0.0.1" },
  { "0x7F000001", "127.0.0.1" },
  { "127.000.000.001", "127.0.0.1" },
  { "0x7f.0x00.0x00.0x01", "127.0.0.1" },
  { "127.255.255.254", "127.255.255.254" },
  { "0", "0.0.0.0" },
  { "0.0", "0.0.0.0" },
  { "0x0", "0.0.0.0" },
  { "2852039166", "169.254.169.254" },
  { "0xa9fea9fe", "169.254.169.254" },
  { "0251.0376.0251.0376", "169.254.169.254" },
  { "0xa9.0xfe.0xa9.0xfe", "169.254.169.254" },
  { "169.254.43518", "169.254.169.254" },
  { "169.16689662", "169.254.169.254" },
  { "3221225664", "192.0.0.192" },
  { "1684300999", "100.100.100.199" },
  { "0x64646464", "100.100.100.100" },
  { "10.1", "10.0.0.1" },
  { "012.1", "10.0.0.1" },
  { "3232235777", "192.168.1.1" },
  { "0xc0.0xa8.1", "192.168.0.1" },
  { "4294967295", "255.255.255.255" },
  /* IPv6 spellings */
  { "::1", "::1" },
  { "0:0:0:0:0:0:0:1", "::1" },
  { "0000:0000:0000:0000:0000:0000:0000:0001", "::1" },
  { "::0:1", "::1" },
  { "::", "::" },
  { "::ffff:127.0.0.1", "::ffff:127.0.0.1" },
  { "::ffff:7f00:1", "::ffff:127.0.0.1" },
  { "0:0:0:0:0:ffff:127.0.0.1", "::ffff:127.0.0.1" },
  { "::FFFF:7F00:0001", "::ffff:127.0.0.1" },
  { "::127.0.0.1", "::127.0.0.1" },
  { "::7f00:1", "::127.0.0.1" },
  { "::ffff:0:7f00:1", "::ffff:0:7f00:1" },
  { "64:ff9b::127.0.0.1", "64:ff9b::7f00:1" },
  { "64:ff9b::7f00:1", "64:ff9b::7f00:1" },
  { "64:ff9b:1::127.0.0.1", "64:ff9b:1::7f00:1" },
  { "2002:7f00:0001::", "2002:7f00:1::" },
  { "2002:7f00:1:0:0:0:0:1", "2002:7f00:1::1" },
  { "2001:0:4136:e378:8000:63bf:80ff:fffe", "2001:0:4136:e378:8000:63bf:80ff:fffe" },
  { "::ffff:169.254.169.254", "::ffff:169.254.169.254" },
  { "::ffff:a9fe:a9fe", "::ffff:169.254.169.254" },
  { "64:ff9b::169.254.169.254", "64:ff9b::a9fe:a9fe" },
  { "fd00:ec2::254", "fd00:ec2::254" },
  { "FD00:0EC2:0000:0000:0000:0000:0000:0254", "fd00:ec2::254" },
  { "fe80::1%1", "fe80::1" },
  { "::ffff:10.0.0.1", "::ffff:10.0.0.1" },
  { "fc00::1", "fc00::1" },
};

/* Parse @text as a resolver would for a URL host with no DNS: getaddrinfo with
 * AI_NUMERICHOST (glibc accepts inet_aton forms there), else inet_aton. */
static gboolean
attacker_sockaddr (const char *text, guint16 port, struct sockaddr_storage *ss)
{
  memset (ss, 0, sizeof *ss);
  struct addrinfo hints = { .ai_flags = AI_NUMERICHOST, .ai_family = AF_UNSPEC,
                            .ai_socktype = SOCK_STREAM };
  struct addrinfo *res = NULL;
  if (getaddrinfo (text, NULL, &hints, &res) == 0 && res) {
    memcpy (ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo (res);
  } else {
    struct sockaddr_in *sin = (struct sockaddr_in *) ss;
    if (inet_aton (text, &sin->sin_addr) == 0)
      return FALSE;
    sin->sin_family = AF_INET;
  }
  if (ss->ss_family == AF_INET)
    ((struct sockaddr_in *) ss)->sin_port = htons (port);
  else
    ((struct sockaddr_in6 *) ss)->sin6_port = htons (port);
  return TRUE;
}

static void
test_attacker (gconstpointer data)
{
  const AttackCase *c = data;
  g_autoptr (EbPolicy) p = eb_policy_new ();
  struct sockaddr_storage ss;
  g_assert_true (attacker_sockaddr (c->text, 80, &ss));
  g_autofree char *canon = sa_to_text (SA (ss));
  g_assert_cmpstr (canon, ==, c->addr);
  g_autofree char *why = NULL;
  g_assert_cmpint (eb_policy_check (p, SA (ss), &why), ==, EB_POLICY_REFUSED);
  g_test_message ("%s -> %s", c->text, why);
  g_assert_true (g_str_has_prefix (why, "refused address "));
  /* the strict configuration parser never reads the legacy IPv4 forms */
  if (strchr (c->text, ':') == NULL && strcmp (c->text, c->addr) != 0) {
    EbCidr cd;
    g_autoptr (GError) error = NULL;
    g_assert_false (eb_policy_cidr_parse (c->text, &cd, &error));
    g_assert_error (error, EB_ERROR, EB_ERROR_SYNTAX);
  }
}

/* ---- Cloud metadata ----------------------------------------------------------- */

static const char *const metadata_addrs[] = {
  "169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "168.63.129.16",
  "fd00:ec2::254",
};

static void
test_metadata (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  for (guint i = 0; i < G_N_ELEMENTS (metadata_addrs); i++) {
    for (guint16 port = 0; port <= 80; port += 80) {
      EbPolicyDecision d;
      g_autofree char *why = NULL;
      g_assert_cmpint (check (p, metadata_addrs[i], port, &d, &why), ==, EB_POLICY_REFUSED);
      g_assert_cmpint (d.rule, ==, EB_POLICY_RULE_ADDRESS_CLASS);
      g_assert_cmpint (d.reason_class, ==, EB_ADDR_METADATA);
      g_autofree char *expect = g_strdup_printf ("refused address %s: cloud metadata service",
                                                 metadata_addrs[i]);
      g_assert_cmpstr (why, ==, expect);
    }
  }
  /* even when a broad allow block covers the surrounding range, a deny wins */
  EbCidr ll = cidr ("169.254.0.0/16"), md = cidr ("169.254.169.254");
  eb_policy_add_allow (p, &ll);
  eb_policy_add_deny (p, &md);
  g_assert_cmpint (check (p, "169.254.169.254", 80, NULL, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (check (p, "::ffff:169.254.169.254", 80, NULL, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (check (p, "169.254.1.1", 80, NULL, NULL), ==, EB_POLICY_ALLOWED);
}

/* ---- Exact reasons --------------------------------------------------------------- */

static void
test_reasons (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  EbCidr deny = cidr ("203.0.113.0/24"), allow = cidr ("127.0.0.2");
  eb_policy_add_deny (p, &deny);
  eb_policy_add_allow (p, &allow);
  struct sockaddr_storage own;
  sa_from_text ("93.184.216.35", 0, &own);
  eb_policy_add_own_address (p, SA (own));

  static const struct { const char *addr; guint16 port; const char *why; } cases[] = {
    { "127.0.0.1", 80, "refused address 127.0.0.1: loopback" },
    { "93.184.216.34", 8080, "refused port 8080 of 93.184.216.34" },
    { "2606:2800:220:1:248:1893:25c8:1946", 22, "refused port 22 of 2606:2800:220:1:248:1893:25c8:1946" },
    { "203.0.113.7", 443, "refused address 203.0.113.7: denied by deny_networks 203.0.113.0/24" },
    { "2002:cb00:7107::", 443,
      "refused address 2002:cb00:7107::: denied by deny_networks 203.0.113.0/24 (IPv4 203.0.113.7 inside 6to4)" },
    { "93.184.216.34", 443, "allowed address 93.184.216.34 port 443: global unicast" },
    { "93.184.216.34", 0, "allowed address 93.184.216.34: global unicast (port not yet known)" },
    { "127.0.0.2", 8080, "allowed address 127.0.0.2 port 8080: in allow_networks 127.0.0.2/32" },
    { "93.184.216.35", 443, "refused address 93.184.216.35: one of this host's own addresses" },
    { "::ffff:93.184.216.35", 443,
      "refused address ::ffff:93.184.216.35: one of this host's own addresses (IPv4 93.184.216.35 inside IPv4-mapped IPv6)" },
    { "10.0.0.1", 443, "refused address 10.0.0.1: private network" },
    { "fe80::1", 443, "refused address fe80::1: link-local" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *why = NULL;
    check (p, cases[i].addr, cases[i].port, NULL, &why);
    g_assert_cmpstr (why, ==, cases[i].why);
  }
  /* @why is optional */
  g_assert_cmpint (check (p, "127.0.0.1", 80, NULL, NULL), ==, EB_POLICY_REFUSED);
}

/* ---- Allow and deny precedence --------------------------------------------------- */

static void
test_allow_single (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  EbCidr a = cidr ("127.0.0.2/32");
  eb_policy_add_allow (p, &a);
  EbPolicyDecision d;
  g_assert_cmpint (check (p, "127.0.0.2", 8080, &d, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (d.rule, ==, EB_POLICY_RULE_ALLOW_NETWORKS);
  g_autofree char *b = eb_policy_cidr_to_string (&d.network);
  g_assert_cmpstr (b, ==, "127.0.0.2/32");
  g_assert_cmpint (check (p, "127.0.0.2", 0, NULL, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (check (p, "127.0.0.2", 65535, NULL, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (check (p, "127.0.0.1", 8080, &d, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (d.rule, ==, EB_POLICY_RULE_ADDRESS_CLASS);
  g_assert_cmpint (check (p, "127.0.0.1", 80, NULL, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (check (p, "127.0.0.3", 8080, NULL, NULL), ==, EB_POLICY_REFUSED);
  /* the mapped twin is the same destination */
  g_assert_cmpint (check (p, "::ffff:127.0.0.2", 8080, NULL, NULL), ==, EB_POLICY_ALLOWED);
  /* other embeddings are other destinations: not allowed by an IPv4 block */
  g_assert_cmpint (check (p, "64:ff9b::7f00:2", 8080, NULL, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (check (p, "2002:7f00:2::", 8080, NULL, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (check (p, "::127.0.0.2", 8080, NULL, NULL), ==, EB_POLICY_REFUSED);
  /* ::1 stays refused */
  g_assert_cmpint (check (p, "::1", 8080, NULL, NULL), ==, EB_POLICY_REFUSED);
  EbCidr v6 = cidr ("::1/128");
  eb_policy_add_allow (p, &v6);
  g_assert_cmpint (check (p, "::1", 8080, NULL, NULL), ==, EB_POLICY_ALLOWED);
}

static void
test_deny_inside_allow (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  EbCidr deny = cidr ("127.0.0.128/25"), allow = cidr ("127.0.0.0/8");
  /* order of set-up does not matter: deny always wins */
  eb_policy_add_deny (p, &deny);
  eb_policy_add_allow (p, &allow);
  EbPolicyDecision d;
  g_assert_cmpint (check (p, "127.0.0.1", 8080, &d, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (check (p, "127.0.0.127", 8080, NULL, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (check (p, "127.0.0.128", 8080, &d, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (d.rule, ==, EB_POLICY_RULE_DENY_NETWORKS);
  g_assert_cmpint (check (p, "127.0.0.255", 8080, NULL, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (check (p, "127.0.1.128", 8080, NULL, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (check (p, "::ffff:127.0.0.200", 8080, NULL, NULL), ==, EB_POLICY_REFUSED);

  /* the same block in both lists: denied */
  g_autoptr (EbPolicy) q = eb_policy_new ();
  EbCidr both = cidr ("198.51.100.0/24");
  eb_policy_add_allow (q, &both);
  eb_policy_add_deny (q, &both);
  g_assert_cmpint (check (q, "198.51.100.1", 80, &d, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (d.rule, ==, EB_POLICY_RULE_DENY_NETWORKS);
}

static void
test_deny_global (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  EbCidr d4 = cidr ("93.184.216.0/24"), d6 = cidr ("2606:2800::/32");
  eb_policy_add_deny (p, &d4);
  eb_policy_add_deny (p, &d6);
  static const char *const refused[] = {
    "93.184.216.34", "::ffff:93.184.216.34", "64:ff9b::5db8:d822", "2002:5db8:d822::",
    "2001:0:4136:e378:8000:63bf:a247:27dd", "2606:2800:220:1:248:1893:25c8:1946",
  };
  for (guint i = 0; i < G_N_ELEMENTS (refused); i++) {
    EbPolicyDecision d;
    g_assert_cmpint (check (p, refused[i], 443, &d, NULL), ==, EB_POLICY_REFUSED);
    g_assert_cmpint (d.rule, ==, EB_POLICY_RULE_DENY_NETWORKS);
  }
  g_assert_cmpint (check (p, "93.184.217.34", 443, NULL, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (check (p, "2606:2801::1", 443, NULL, NULL), ==, EB_POLICY_ALLOWED);

  /* an IPv6 block over the mapped range covers every IPv4 address */
  g_autoptr (EbPolicy) q = eb_policy_new ();
  EbCidr m = cidr ("::ffff:0:0/96");
  eb_policy_add_deny (q, &m);
  g_assert_cmpint (check (q, "8.8.8.8", 443, NULL, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (check (q, "2606:2800::1", 443, NULL, NULL), ==, EB_POLICY_ALLOWED);
}

/* ---- Ports -------------------------------------------------------------------------- */

static void
test_ports (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  static const struct { guint16 port; gboolean ok; } defaults[] = {
    { 0, TRUE }, { 21, TRUE }, { 80, TRUE }, { 443, TRUE }, { 20, FALSE }, { 22, FALSE },
    { 25, FALSE }, { 81, FALSE }, { 444, FALSE }, { 8080, FALSE }, { 65535, FALSE }, { 1, FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (defaults); i++) {
    EbPolicyDecision d;
    EbPolicyVerdict v = check (p, "93.184.216.34", defaults[i].port, &d, NULL);
    g_assert_cmpint (v, ==, defaults[i].ok ? EB_POLICY_ALLOWED : EB_POLICY_REFUSED);
    g_assert_cmpint (d.rule, ==, defaults[i].ok ? EB_POLICY_RULE_DEFAULT : EB_POLICY_RULE_PORT);
    g_assert_cmpint (d.port, ==, defaults[i].port);
    g_assert_cmpint (check (p, "2606:2800::1", defaults[i].port, NULL, NULL), ==, v);
    if (defaults[i].port)
      g_assert_cmpint (eb_policy_port_allowed (p, defaults[i].port), ==, defaults[i].ok);
  }
  /* the class is checked before the port */
  EbPolicyDecision d;
  g_assert_cmpint (check (p, "127.0.0.1", 8080, &d, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (d.rule, ==, EB_POLICY_RULE_ADDRESS_CLASS);

  /* replacing the set */
  static const guint16 mine[] = { 8443, 0, 65535 };
  eb_policy_set_allowed_ports (p, mine, G_N_ELEMENTS (mine));
  g_assert_cmpint (check (p, "93.184.216.34", 443, NULL, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (check (p, "93.184.216.34", 8443, NULL, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (check (p, "93.184.216.34", 65535, NULL, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (check (p, "93.184.216.34", 0, NULL, NULL), ==, EB_POLICY_ALLOWED);

  /* an empty set: only unknown ports and allow_networks pass */
  eb_policy_set_allowed_ports (p, NULL, 0);
  g_assert_cmpint (check (p, "93.184.216.34", 80, NULL, NULL), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (check (p, "93.184.216.34", 0, NULL, NULL), ==, EB_POLICY_ALLOWED);
  EbCidr a = cidr ("127.0.0.1"), g = cidr ("93.184.216.0/24");
  eb_policy_add_allow (p, &a);
  eb_policy_add_allow (p, &g);
  for (guint port = 1; port <= 65535; port += 997) {
    g_assert_cmpint (check (p, "127.0.0.1", (guint16) port, NULL, NULL), ==, EB_POLICY_ALLOWED);
    g_assert_cmpint (check (p, "93.184.216.34", (guint16) port, NULL, NULL), ==, EB_POLICY_ALLOWED);
  }
}

/* ---- Own addresses ---------------------------------------------------------------- */

static void
test_own (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  struct sockaddr_storage o4, o6;
  sa_from_text ("93.184.216.34", 4242, &o4);   /* the port is ignored */
  sa_from_text ("2606:2800:220:1:248:1893:25c8:1946", 0, &o6);
  eb_policy_add_own_address (p, SA (o4));
  eb_policy_add_own_address (p, SA (o6));
  static const char *const own[] = {
    "93.184.216.34", "::ffff:93.184.216.34", "64:ff9b::5db8:d822", "2002:5db8:d822::",
    "2606:2800:220:1:248:1893:25c8:1946",
  };
  for (guint i = 0; i < G_N_ELEMENTS (own); i++) {
    EbPolicyDecision d;
    g_assert_cmpint (check (p, own[i], 443, &d, NULL), ==, EB_POLICY_REFUSED);
    g_assert_cmpint (d.rule, ==, EB_POLICY_RULE_OWN_ADDRESS);
  }
  g_assert_cmpint (check (p, "93.184.216.35", 443, NULL, NULL), ==, EB_POLICY_ALLOWED);
  g_assert_cmpint (check (p, "2606:2800:220:1:248:1893:25c8:1947", 443, NULL, NULL), ==, EB_POLICY_ALLOWED);
  /* an explicit allow wins over the own-address rule */
  EbCidr a = cidr ("93.184.216.34");
  eb_policy_add_allow (p, &a);
  g_assert_cmpint (check (p, "93.184.216.34", 8080, NULL, NULL), ==, EB_POLICY_ALLOWED);
  /* not an IP address: ignored */
  struct sockaddr_un un = { .sun_family = AF_UNIX };
  eb_policy_add_own_address (p, (const struct sockaddr *) &un);
}

static void
test_host_addresses (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_policy_add_host_addresses (p, &error));
  g_assert_no_error (error);
  struct ifaddrs *list = NULL;
  g_assert_cmpint (getifaddrs (&list), ==, 0);
  guint n = 0;
  for (struct ifaddrs *i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
      continue;
    struct sockaddr_storage ss = { 0 };
    memcpy (&ss, i->ifa_addr, i->ifa_addr->sa_family == AF_INET ? sizeof (struct sockaddr_in)
                                                                  : sizeof (struct sockaddr_in6));
    ((struct sockaddr_in *) &ss)->sin_port = htons (443);  /* same offset in both */
    g_autofree char *why = NULL;
    g_assert_cmpint (eb_policy_check (p, SA (ss), &why), ==, EB_POLICY_REFUSED);
    g_test_message ("%s: %s", i->ifa_name, why);
    n++;
  }
  freeifaddrs (list);
  g_test_message ("%u host addresses", n);
}

/* ---- Not an IP address ------------------------------------------------------------- */

static void
test_not_ip (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  struct sockaddr_un un = { .sun_family = AF_UNIX };
  g_strlcpy (un.sun_path, "/tmp/x", sizeof un.sun_path);
  const struct sockaddr *sa = (const struct sockaddr *) &un;
  g_assert_cmpint (eb_policy_addr_classify (sa), ==, EB_ADDR_NOT_IP);
  g_assert_cmpint (eb_policy_addr_classify (NULL), ==, EB_ADDR_NOT_IP);
  EbPolicyDecision d;
  g_autofree char *why = NULL;
  g_assert_cmpint (eb_policy_decide (p, sa, &d, &why), ==, EB_POLICY_REFUSED);
  g_assert_cmpint (d.rule, ==, EB_POLICY_RULE_NOT_IP);
  g_assert_cmpstr (why, ==, "refused: not an IPv4 or IPv6 socket address");
  g_assert_cmpint (eb_policy_check (p, NULL, NULL), ==, EB_POLICY_REFUSED);
  struct in_addr v4;
  g_assert_false (eb_policy_addr_embedded_ipv4 (sa, &v4));
  g_assert_false (eb_policy_addr_embedded_ipv4 (NULL, &v4));
  EbCidr all = cidr ("0.0.0.0/0");
  g_assert_false (eb_policy_cidr_contains (&all, sa));
  /* even allow-all does not let it through */
  eb_policy_add_allow (p, &all);
  g_assert_cmpint (eb_policy_check (p, sa, NULL), ==, EB_POLICY_REFUSED);
}

/* ---- The class table --------------------------------------------------------------- */

static void
test_class_table (void)
{
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  for (EbAddrClass c = 0; c < EB_ADDR_N; c++) {
    const char *t = eb_policy_addr_class_token (c);
    g_assert_true (t && *t);
    g_assert_true (eb_policy_addr_class_text (c) && *eb_policy_addr_class_text (c));
    g_assert_false (g_hash_table_contains (seen, t));
    g_hash_table_add (seen, (gpointer) t);
    for (const char *s = t; *s; s++)
      g_assert_true (g_ascii_islower (*s) || g_ascii_isdigit (*s) || *s == '-');
  }
  /* exactly these are not refused for their own sake */
  for (EbAddrClass c = 0; c < EB_ADDR_N; c++) {
    gboolean passes = c == EB_ADDR_GLOBAL || c == EB_ADDR_IPV4_MAPPED || c == EB_ADDR_NAT64
                      || c == EB_ADDR_6TO4 || c == EB_ADDR_TEREDO;
    g_assert_cmpint (eb_policy_addr_class_is_refused (c), ==, !passes);
  }
  g_assert_cmpstr (eb_policy_addr_class_token (EB_ADDR_METADATA), ==, "cloud-metadata");
  g_assert_cmpstr (eb_policy_addr_class_token (EB_ADDR_LOOPBACK), ==, "loopback");
}

/* ---- CIDR parsing -------------------------------------------------------------------- */

typedef struct {
  const char *text;
  const char *canon;
  int         family;
} CidrOk;

static const CidrOk cidr_ok[] = {
  { "10.0.0.0/8", "10.0.0.0/8", AF_INET },
  { "10.1.2.3/8", "10.0.0.0/8", AF_INET },
  { "172.31.255.255/12", "172.16.0.0/12", AF_INET },
  { "127.0.0.1", "127.0.0.1/32", AF_INET },
  { "127.0.0.1/32", "127.0.0.1/32", AF_INET },
  { "1.2.3.5/31", "1.2.3.4/31", AF_INET },
  { "0.0.0.0/0", "0.0.0.0/0", AF_INET },
  { "255.255.255.255/0", "0.0.0.0/0", AF_INET },
  { "192.0.2.255/25", "192.0.2.128/25", AF_INET },
  { "::1", "::1/128", AF_INET6 },
  { "::1/128", "::1/128", AF_INET6 },
  { "::/0", "::/0", AF_INET6 },
  { "2001:db8::/32", "2001:db8::/32", AF_INET6 },
  { "2001:db8:ffff::1/32", "2001:db8::/32", AF_INET6 },
  { "2001:DB8::/32", "2001:db8::/32", AF_INET6 },
  { "fe80::/10", "fe80::/10", AF_INET6 },
  { "febf:ffff::/9", "fe80::/9", AF_INET6 },
  { "::ffff:10.0.0.0/104", "::ffff:10.0.0.0/104", AF_INET6 },
  { "0000:0000:0000:0000:0000:0000:0000:0001/127", "::/127", AF_INET6 },
};

static void
test_cidr_ok (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (cidr_ok); i++) {
    EbCidr c;
    g_autoptr (GError) error = NULL;
    g_assert_true (eb_policy_cidr_parse (cidr_ok[i].text, &c, &error));
    g_assert_no_error (error);
    g_assert_cmpint (c.family, ==, cidr_ok[i].family);
    g_autofree char *s = eb_policy_cidr_to_string (&c);
    g_assert_cmpstr (s, ==, cidr_ok[i].canon);
    /* the canonical form parses to itself */
    EbCidr again = cidr (s);
    g_assert_cmpmem (&again, sizeof again, &c, sizeof c);
  }
}

typedef struct {
  const char *name;
  const char *text;
  EbError     code;
} CidrErr;

static const CidrErr cidr_err[] = {
  { "null", NULL, EB_ERROR_EMPTY },
  { "empty", "", EB_ERROR_EMPTY },
  { "no-address", "/8", EB_ERROR_MISSING },
  { "only-slash", "/", EB_ERROR_MISSING },
  { "no-prefix", "10.0.0.0/", EB_ERROR_MISSING },
  { "no-prefix-v6", "::/", EB_ERROR_MISSING },
  { "prefix-33", "10.0.0.0/33", EB_ERROR_SYNTAX },
  { "prefix-129", "::/129", EB_ERROR_SYNTAX },
  { "prefix-1000", "1.2.3.4/1000", EB_ERROR_SYNTAX },
  { "prefix-negative", "10.0.0.0/-1", EB_ERROR_SYNTAX },
  { "prefix-plus", "10.0.0.0/+8", EB_ERROR_SYNTAX },
  { "prefix-leading-zero", "10.0.0.0/08", EB_ERROR_SYNTAX },
  { "prefix-hex", "10.0.0.0/0x8", EB_ERROR_SYNTAX },
  { "prefix-junk", "10.0.0.0/8a", EB_ERROR_SYNTAX },
  { "prefix-space", "10.0.0.0/ 8", EB_ERROR_SYNTAX },
  { "two-slashes", "10.0.0.0/8/8", EB_ERROR_SYNTAX },
  { "leading-space", " 10.0.0.0/8", EB_ERROR_SYNTAX },
  { "trailing-space", "10.0.0.0/8 ", EB_ERROR_SYNTAX },
  { "trailing-newline", "10.0.0.0\n", EB_ERROR_SYNTAX },
  { "three-octets", "10.0.0/8", EB_ERROR_SYNTAX },
  { "octal-octet", "010.0.0.0/8", EB_ERROR_SYNTAX },
  { "octet-256", "256.0.0.0/8", EB_ERROR_SYNTAX },
  { "hex-short", "0x7f.1", EB_ERROR_SYNTAX },
  { "one-number", "2130706433", EB_ERROR_SYNTAX },
  { "zone", "fe80::1%eth0/64", EB_ERROR_SYNTAX },
  { "brackets", "[::1]/128", EB_ERROR_SYNTAX },
  { "two-double-colons", "::1::2", EB_ERROR_SYNTAX },
  { "host-name", "example.com", EB_ERROR_SYNTAX },
  { "too-long", "0000:0000:0000:0000:0000:0000:0000:0000:0000:0001", EB_ERROR_SYNTAX },
  { "comma", "10.0.0.0/8,", EB_ERROR_SYNTAX },
};

static void
test_cidr_err (gconstpointer data)
{
  const CidrErr *c = data;
  EbCidr out;
  memset (&out, 0xab, sizeof out);
  EbCidr before = out;
  g_autoptr (GError) error = NULL;
  g_assert_false (eb_policy_cidr_parse (c->text, &out, &error));
  g_assert_error (error, EB_ERROR, (gint) c->code);
  g_test_message ("%s", error->message);
  g_assert_cmpmem (&out, sizeof out, &before, sizeof before);
}

typedef struct {
  const char *cidr;
  const char *addr;
  gboolean    in;
} ContainsCase;

static const ContainsCase contains_cases[] = {
  { "10.0.0.0/8", "10.0.0.0", TRUE },
  { "10.0.0.0/8", "10.255.255.255", TRUE },
  { "10.0.0.0/8", "9.255.255.255", FALSE },
  { "10.0.0.0/8", "11.0.0.0", FALSE },
  { "10.0.0.0/8", "::ffff:10.1.2.3", TRUE },
  { "10.0.0.0/8", "::ffff:11.1.2.3", FALSE },
  { "10.0.0.0/8", "64:ff9b::a01:203", FALSE },
  { "10.0.0.0/8", "2002:a01:203::", FALSE },
  { "10.0.0.0/8", "::10.1.2.3", FALSE },
  { "1.2.3.4/31", "1.2.3.5", TRUE },
  { "1.2.3.4/31", "1.2.3.6", FALSE },
  { "1.2.3.4", "1.2.3.4", TRUE },
  { "0.0.0.0/0", "255.255.255.255", TRUE },
  { "0.0.0.0/0", "::1", FALSE },
  { "0.0.0.0/0", "::ffff:1.2.3.4", TRUE },
  { "::/0", "1.2.3.4", TRUE },
  { "::/0", "ffff::", TRUE },
  { "::ffff:0:0/96", "10.1.2.3", TRUE },
  { "::ffff:10.0.0.0/104", "10.9.9.9", TRUE },
  { "::ffff:10.0.0.0/104", "11.9.9.9", FALSE },
  { "2001:db8::/32", "2001:db8:ffff::1", TRUE },
  { "2001:db8::/32", "2001:db9::", FALSE },
  { "2001:db8::/32", "10.0.0.1", FALSE },
  { "fe80::/10", "febf::1", TRUE },
  { "fe80::/10", "fec0::1", FALSE },
  { "::1/128", "::1", TRUE },
  { "::1/128", "::", FALSE },
};

static void
test_cidr_contains (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (contains_cases); i++) {
    EbCidr c = cidr (contains_cases[i].cidr);
    struct sockaddr_storage ss;
    sa_from_text (contains_cases[i].addr, 80, &ss);
    if (eb_policy_cidr_contains (&c, SA (ss)) != contains_cases[i].in)
      g_error ("%s contains %s: expected %d", contains_cases[i].cidr, contains_cases[i].addr,
               contains_cases[i].in);
  }
}

/* ---- Lists ---------------------------------------------------------------------------- */

typedef struct {
  const char *text;
  const char *joined;   /* canonical blocks joined by ' ', or NULL for an error */
  EbError     code;
  const char *message;  /* a substring of the error message */
} ListCase;

static const ListCase cidr_lists[] = {
  { "127.0.0.0/8, ::1/128", "127.0.0.0/8 ::1/128" },
  { "127.0.0.0/8,::1/128", "127.0.0.0/8 ::1/128" },
  { "127.0.0.0/8 ::1/128", "127.0.0.0/8 ::1/128" },
  { "10.0.0.0/8 ,\t192.168.0.0/16\n,  172.16.0.0/12", "10.0.0.0/8 192.168.0.0/16 172.16.0.0/12" },
  { "  10.0.0.0/8  ", "10.0.0.0/8" },
  { "1.1.1.1 2.2.2.2   3.3.3.3", "1.1.1.1/32 2.2.2.2/32 3.3.3.3/32" },
  { "", "" },
  { "   \t ", "" },
  { ",", NULL, EB_ERROR_EMPTY, "item 1" },
  { ",10.0.0.0/8", NULL, EB_ERROR_EMPTY, "item 1" },
  { "10.0.0.0/8,", NULL, EB_ERROR_EMPTY, "item 2" },
  { "10.0.0.0/8, ", NULL, EB_ERROR_EMPTY, "item 2" },
  { "10.0.0.0/8,,::1", NULL, EB_ERROR_EMPTY, "item 2" },
  { "10.0.0.0/8 , , ::1", NULL, EB_ERROR_EMPTY, "item 2" },
  { "10.0.0.0/8, junk", NULL, EB_ERROR_SYNTAX, "item 2 of the list: network block \"junk\"" },
  { "10.0.0.0/8 /8", NULL, EB_ERROR_MISSING, "item 2" },
  { "10.0.0.0/8; ::1", NULL, EB_ERROR_SYNTAX, "item 1" },
  { "10.0.0.0/33", NULL, EB_ERROR_SYNTAX, "prefix length 33 is above 32" },
};

static void
test_cidr_list (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (cidr_lists); i++) {
    const ListCase *c = &cidr_lists[i];
    g_autoptr (GPtrArray) list = NULL;
    g_autoptr (GError) error = NULL;
    gboolean ok = eb_list_parse_cidrs (c->text, &list, &error);
    if (c->joined) {
      g_assert_no_error (error);
      g_assert_true (ok);
      g_autoptr (GString) s = g_string_new (NULL);
      for (guint j = 0; j < list->len; j++) {
        g_autofree char *b = eb_policy_cidr_to_string (list->pdata[j]);
        g_string_append_printf (s, "%s%s", j ? " " : "", b);
      }
      g_assert_cmpstr (s->str, ==, c->joined);
    } else {
      g_assert_false (ok);
      g_assert_null (list);
      g_assert_error (error, EB_ERROR, (gint) c->code);
      if (!strstr (error->message, c->message))
        g_error ("\"%s\": message \"%s\" lacks \"%s\"", c->text, error->message, c->message);
    }
  }
  /* NULL is an empty list */
  g_autoptr (GPtrArray) list = NULL;
  g_assert_true (eb_list_parse_cidrs (NULL, &list, NULL));
  g_assert_cmpuint (list->len, ==, 0);
}

static const ListCase port_lists[] = {
  { "80, 443, 21", "80 443 21" },
  { "8080", "8080" },
  { "1 65535", "1 65535" },
  { "", "" },
  { "0", NULL, EB_ERROR_SYNTAX, "\"0\"" },
  { "65536", NULL, EB_ERROR_SYNTAX, "item 1" },
  { "080", NULL, EB_ERROR_SYNTAX, "item 1" },
  { "-1", NULL, EB_ERROR_SYNTAX, "item 1" },
  { "+80", NULL, EB_ERROR_SYNTAX, "item 1" },
  { "http", NULL, EB_ERROR_SYNTAX, "item 1" },
  { "80, 99999999999999999999", NULL, EB_ERROR_SYNTAX, "item 2" },
  { "80,,443", NULL, EB_ERROR_EMPTY, "item 2" },
  { "80,", NULL, EB_ERROR_EMPTY, "item 2" },
};

static void
test_port_list (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (port_lists); i++) {
    const ListCase *c = &port_lists[i];
    g_autoptr (GArray) ports = NULL;
    g_autoptr (GError) error = NULL;
    gboolean ok = eb_list_parse_ports (c->text, &ports, &error);
    if (c->joined) {
      g_assert_no_error (error);
      g_assert_true (ok);
      g_autoptr (GString) s = g_string_new (NULL);
      for (guint j = 0; j < ports->len; j++)
        g_string_append_printf (s, "%s%u", j ? " " : "", g_array_index (ports, guint16, j));
      g_assert_cmpstr (s->str, ==, c->joined);
    } else {
      g_assert_false (ok);
      g_assert_null (ports);
      g_assert_error (error, EB_ERROR, (gint) c->code);
      if (!strstr (error->message, c->message))
        g_error ("\"%s\": message \"%s\" lacks \"%s\"", c->text, error->message, c->message);
    }
  }
  /* a parsed list feeds the policy */
  g_autoptr (GArray) ports = NULL;
  g_assert_true (eb_list_parse_ports ("8080 8443", &ports, NULL));
  g_autoptr (EbPolicy) p = eb_policy_new ();
  eb_policy_set_allowed_ports (p, (const guint16 *) ports->data, ports->len);
  g_assert_true (eb_policy_port_allowed (p, 8443));
  g_assert_false (eb_policy_port_allowed (p, 443));
}

/* ---- Many readers ---------------------------------------------------------------------- */

static gpointer
reader (gpointer data)
{
  EbPolicy *p = data;
  for (guint i = 0; i < 20000; i++) {
    g_autofree char *why = NULL;
    g_assert_cmpint (check (p, "127.0.0.2", 8080, NULL, &why), ==, EB_POLICY_ALLOWED);
    g_assert_cmpint (check (p, "::ffff:127.0.0.1", 80, NULL, NULL), ==, EB_POLICY_REFUSED);
    g_assert_cmpint (check (p, "93.184.216.34", 443, NULL, NULL), ==, EB_POLICY_ALLOWED);
    g_assert_cmpint (check (p, "93.184.216.34", 25, NULL, NULL), ==, EB_POLICY_REFUSED);
  }
  eb_policy_unref (p);
  return NULL;
}

static void
test_threads (void)
{
  g_autoptr (EbPolicy) p = eb_policy_new ();
  EbCidr a = cidr ("127.0.0.2");
  eb_policy_add_allow (p, &a);
  GThread *threads[8];
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    threads[i] = g_thread_new ("reader", reader, eb_policy_ref (p));
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    g_thread_join (threads[i]);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (v4_cases); i++) {
    g_autofree char *path = g_strdup_printf ("/policy/classify/ipv4/%s", v4_cases[i].addr);
    g_test_add_data_func (path, &v4_cases[i], test_classify);
  }
  for (guint i = 0; i < G_N_ELEMENTS (v6_cases); i++) {
    g_autofree char *path = g_strdup_printf ("/policy/classify/ipv6/%s", v6_cases[i].addr);
    g_test_add_data_func (path, &v6_cases[i], test_classify);
  }
  for (guint i = 0; i < G_N_ELEMENTS (embed_cases); i++) {
    g_autofree char *path = g_strdup_printf ("/policy/embedded/%s", embed_cases[i].name);
    g_test_add_data_func (path, &embed_cases[i], test_embedded);
  }
  for (guint i = 0; i < G_N_ELEMENTS (attack_cases); i++) {
    g_autofree char *path = g_strdup_printf ("/policy/attacker/%s", attack_cases[i].text);
    g_test_add_data_func (path, &attack_cases[i], test_attacker);
  }
  g_test_add_func ("/policy/metadata", test_metadata);
  g_test_add_func ("/policy/reasons", test_reasons);
  g_test_add_func ("/policy/allow/single-address", test_allow_single);
  g_test_add_func ("/policy/allow/deny-inside-allow", test_deny_inside_allow);
  g_test_add_func ("/policy/deny/embedded-and-mapped", test_deny_global);
  g_test_add_func ("/policy/ports", test_ports);
  g_test_add_func ("/policy/own/added", test_own);
  g_test_add_func ("/policy/own/host-addresses", test_host_addresses);
  g_test_add_func ("/policy/not-ip", test_not_ip);
  g_test_add_func ("/policy/class-table", test_class_table);
  g_test_add_func ("/policy/cidr/parse", test_cidr_ok);
  for (guint i = 0; i < G_N_ELEMENTS (cidr_err); i++) {
    g_autofree char *path = g_strdup_printf ("/policy/cidr/error/%s", cidr_err[i].name);
    g_test_add_data_func (path, &cidr_err[i], test_cidr_err);
  }
  g_test_add_func ("/policy/cidr/contains", test_cidr_contains);
  g_test_add_func ("/policy/list/cidr", test_cidr_list);
  g_test_add_func ("/policy/list/ports", test_port_list);
  g_test_add_func ("/policy/threads", test_threads);
  return g_test_run ();
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-policy.c - address classes, CIDR blocks and the connect policy (see eb-policy.h). */
#include "eb-policy.h"
#include "eb-error.h"
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <string.h>

/* ---- The class table ------------------------------------------------------ */

static const struct {
  EbAddrClass code;
  const char *token;
  const char *text;
  gboolean    refused;   /* refused whatever it embeds */
} classes[] = {
  { EB_ADDR_GLOBAL,          "global",          "global unicast",                           FALSE },
  { EB_ADDR_UNSPECIFIED,     "unspecified",     "unspecified or this network",              TRUE },
  { EB_ADDR_LOOPBACK,        "loopback",        "loopback",                                 TRUE },
  { EB_ADDR_PRIVATE,         "private",         "private network",                          TRUE },
  { EB_ADDR_SHARED,          "shared",          "carrier-grade NAT shared space",           TRUE },
  { EB_ADDR_LINK_LOCAL,      "link-local",      "link-local",                               TRUE },
  { EB_ADDR_METADATA,        "cloud-metadata",  "cloud metadata service",                   TRUE },
  { EB_ADDR_IETF_PROTOCOL,   "ietf-protocol",   "IETF protocol assignment",                 TRUE },
  { EB_ADDR_DOCUMENTATION,   "documentation",   "documentation",                            TRUE },
  { EB_ADDR_BENCHMARKING,    "benchmarking",    "benchmarking",                             TRUE },
  { EB_ADDR_6TO4_RELAY,      "6to4-relay",      "6to4 relay anycast",                       TRUE },
  { EB_ADDR_MULTICAST,       "multicast",       "multicast",                                TRUE },
  { EB_ADDR_RESERVED,        "reserved",        "reserved",                                 TRUE },
  { EB_ADDR_BROADCAST,       "broadcast",       "limited broadcast",                        TRUE },
  { EB_ADDR_IPV4_MAPPED,     "ipv4-mapped",     "IPv4-mapped IPv6",                         FALSE },
  { EB_ADDR_IPV4_COMPATIBLE, "ipv4-compatible", "deprecated IPv4-compatible IPv6",          TRUE },
  { EB_ADDR_NAT64,           "nat64",           "NAT64 well-known prefix",                  FALSE },
  { EB_ADDR_NAT64_LOCAL,     "nat64-local",     "NAT64 local-use prefix",                   TRUE },
  { EB_ADDR_6TO4,            "6to4",            "6to4",                                     FALSE },
  { EB_ADDR_TEREDO,          "teredo",          "Teredo",                                   FALSE },
  { EB_ADDR_ORCHID,          "orchid",          "ORCHID",                                   TRUE },
  { EB_ADDR_DISCARD,         "discard",         "discard-only",                             TRUE },
  { EB_ADDR_UNIQUE_LOCAL,    "unique-local",    "unique local",                             TRUE },
  { EB_ADDR_SITE_LOCAL,      "site-local",      "deprecated site-local",                    TRUE },
  { EB_ADDR_NOT_IP,          "not-ip",          "not an IPv4 or IPv6 address",              TRUE },
};

G_STATIC_ASSERT (G_N_ELEMENTS (classes) == EB_ADDR_N);

const char *
eb_policy_addr_class_token (EbAddrClass c)
{
  g_return_val_if_fail (c < EB_ADDR_N, "unknown");
  return classes[c].token;
}

const char *
eb_policy_addr_class_text (EbAddrClass c)
{
  g_return_val_if_fail (c < EB_ADDR_N, "unknown");
  return classes[c].text;
}

gboolean
eb_policy_addr_class_is_refused (EbAddrClass c)
{
  g_return_val_if_fail (c < EB_ADDR_N, TRUE);
  return classes[c].refused;
}

/* ---- Addresses as bytes ------------------------------------------------------ */

/* A socket address reduced to what the policy reads. */
typedef struct {
  int     family;     /* AF_INET or AF_INET6 */
  guint8  addr[16];   /* network order; IPv4 in addr[0..3] */
  guint16 port;       /* host order */
} Addr;

static gboolean
addr_load (const struct sockaddr *sa, Addr *out)
{
  if (sa == NULL)
    return FALSE;
  memset (out, 0, sizeof *out);
  if (sa->sa_family == AF_INET) {
    struct sockaddr_in sin;
    memcpy (&sin, sa, sizeof sin);
    out->family = AF_INET;
    memcpy (out->addr, &sin.sin_addr, 4);
    out->port = ntohs (sin.sin_port);
    return TRUE;
  }
  if (sa->sa_family == AF_INET6) {
    struct sockaddr_in6 sin6;
    memcpy (&sin6, sa, sizeof sin6);
    out->family = AF_INET6;
    memcpy (out->addr, &sin6.sin6_addr, 16);
    out->port = ntohs (sin6.sin6_port);
    return TRUE;
  }
  return FALSE;
}

/* The first @len bits of @a and @net agree. */
static gboolean
prefix_match (const guint8 *a, const guint8 *net, guint len)
{
  guint full = len / 8, rest = len % 8;
  if (memcmp (a, net, full) != 0)
    return FALSE;
  if (rest == 0)
    return TRUE;
  guint8 mask = (guint8) (0xffu << (8 - rest));
  return (a[full] & mask) == (net[full] & mask);
}

typedef struct {
  guint8      net[16];
  guint       len;
  EbAddrClass c;
} Range;

/* First match wins, so exact addresses and inner blocks come before the blocks
 * around them. */
static const Range v4_ranges[] = {
  /* cloud metadata services */
  { { 169, 254, 169, 254 }, 32, EB_ADDR_METADATA },  /* AWS, GCP, Azure, OpenStack, DigitalOcean, ... */
  { { 169, 254, 170, 2 },   32, EB_ADDR_METADATA },  /* AWS ECS task metadata */
  { { 100, 100, 100, 200 }, 32, EB_ADDR_METADATA },  /* Alibaba Cloud */
  { { 192, 0, 0, 192 },     32, EB_ADDR_METADATA },  /* Oracle Cloud */
  { { 168, 63, 129, 16 },   32, EB_ADDR_METADATA },  /* Azure WireServer (a global address, host-local) */
  { { 255, 255, 255, 255 }, 32, EB_ADDR_BROADCAST },
  { { 0, 0, 0, 0 },         8,  EB_ADDR_UNSPECIFIED },
  { { 10, 0, 0, 0 },        8,  EB_ADDR_PRIVATE },
  { { 100, 64, 0, 0 },      10, EB_ADDR_SHARED },
  { { 127, 0, 0, 0 },       8,  EB_ADDR_LOOPBACK },
  { { 169, 254, 0, 0 },     16, EB_ADDR_LINK_LOCAL },
  { { 172, 16, 0, 0 },      12, EB_ADDR_PRIVATE },
  /* all of 192.0.0.0/24, though RFC 7723/8155 anycast 192.0.0.9 and .10 are global */
  { { 192, 0, 0, 0 },       24, EB_ADDR_IETF_PROTOCOL },
  { { 192, 0, 2, 0 },       24, EB_ADDR_DOCUMENTATION },
  { { 192, 88, 99, 0 },     24, EB_ADDR_6TO4_RELAY },
  { { 192, 168, 0, 0 },     16, EB_ADDR_PRIVATE },
  { { 198, 18, 0, 0 },      15, EB_ADDR_BENCHMARKING },
  { { 198, 51, 100, 0 },    24, EB_ADDR_DOCUMENTATION },
  { { 203, 0, 113, 0 },     24, EB_ADDR_DOCUMENTATION },
  { { 224, 0, 0, 0 },       4,  EB_ADDR_MULTICAST },
  { { 240, 0, 0, 0 },       4,  EB_ADDR_RESERVED },
};

static const Range v6_ranges[] = {
  { { 0 },                                                   128, EB_ADDR_UNSPECIFIED },
  { { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 },      128, EB_ADDR_LOOPBACK },
  { { 0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54 }, 128, EB_ADDR_METADATA }, /* AWS IMDS */
  { { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff },            96,  EB_ADDR_IPV4_MAPPED },
  { { 0 },                                                   96,  EB_ADDR_IPV4_COMPATIBLE },
  { { 0, 0x64, 0xff, 0x9b },                                 96,  EB_ADDR_NAT64 },
  { { 0, 0x64, 0xff, 0x9b, 0, 0x01 },                        48,  EB_ADDR_NAT64_LOCAL },
  { { 0x01, 0x00 },                                          64,  EB_ADDR_DISCARD },
  { { 0x20, 0x01, 0x00, 0x00 },                              32,  EB_ADDR_TEREDO },
  { { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 },                  48,  EB_ADDR_BENCHMARKING },
  { { 0x20, 0x01, 0x00, 0x10 },                              28,  EB_ADDR_ORCHID },
  { { 0x20, 0x01, 0x00, 0x20 },                              28,  EB_ADDR_ORCHID },
  { { 0x20, 0x01 },                                          23,  EB_ADDR_IETF_PROTOCOL },
  { { 0x20, 0x01, 0x0d, 0xb8 },                              32,  EB_ADDR_DOCUMENTATION },
  { { 0x20, 0x02 },                                          16,  EB_ADDR_6TO4 },
  { { 0x3f, 0xff },                                          20,  EB_ADDR_DOCUMENTATION },
  { { 0xfc },                                                7,   EB_ADDR_UNIQUE_LOCAL },
  { { 0xfe, 0x80 },                                          10,  EB_ADDR_LINK_LOCAL },
  { { 0xfe, 0xc0 },                                          10,  EB_ADDR_SITE_LOCAL },
  { { 0xff },                                                8,   EB_ADDR_MULTICAST },
  { { 0x20 },                                                3,   EB_ADDR_GLOBAL },
};

static EbAddrClass
classify_v4 (const guint8 *a)
{
  for (guint i = 0; i < G_N_ELEMENTS (v4_ranges); i++)
    if (prefix_match (a, v4_ranges[i].net, v4_ranges[i].len))
      return v4_ranges[i].c;
  return EB_ADDR_GLOBAL;
}

static EbAddrClass
classify_v6 (const guint8 *a)
{
  for (guint i = 0; i < G_N_ELEMENTS (v6_ranges); i++)
    if (prefix_match (a, v6_ranges[i].net, v6_ranges[i].len))
      return v6_ranges[i].c;
  /* outside 2000::/3 and not assigned above: not routed anywhere */
  return EB_ADDR_RESERVED;
}

static EbAddrClass
classify (const Addr *a)
{
  return a->family == AF_INET ? classify_v4 (a->addr) : classify_v6 (a->addr);
}

EbAddrClass
eb_policy_addr_classify (const struct sockaddr *sa)
{
  Addr a;
  if (!addr_load (sa, &a))
    return EB_ADDR_NOT_IP;
  return classify (&a);
}

/* The IPv4 address inside an IPv6 address of class @c, into @v4. */
static gboolean
embedded_v4 (const Addr *a, EbAddrClass c, guint8 v4[4])
{
  if (a->family != AF_INET6)
    return FALSE;
  switch (c) {
  case EB_ADDR_IPV4_MAPPED:
  case EB_ADDR_IPV4_COMPATIBLE:
  case EB_ADDR_NAT64:
  case EB_ADDR_NAT64_LOCAL:     /* RFC 8215 allows other layouts; /96 is the one read */
    memcpy (v4, a->addr + 12, 4);
    return TRUE;
  case EB_ADDR_6TO4:            /* 2002:AABB:CCDD::/48 */
    memcpy (v4, a->addr + 2, 4);
    return TRUE;
  case EB_ADDR_TEREDO:          /* 2001:0:server:flags:port:client, both obfuscated */
    for (guint i = 0; i < 4; i++)
      v4[i] = (guint8) ~a->addr[12 + i];
    return TRUE;
  default:
    return FALSE;
  }
}

gboolean
eb_policy_addr_embedded_ipv4 (const struct sockaddr *sa, struct in_addr *out)
{
  Addr a;
  guint8 v4[4];
  if (!addr_load (sa, &a) || !embedded_v4 (&a, classify (&a), v4))
    return FALSE;
  memcpy (out, v4, 4);
  return TRUE;
}

static void
addr_text (const Addr *a, char buf[INET6_ADDRSTRLEN])
{
  if (inet_ntop (a->family, a->addr, buf, INET6_ADDRSTRLEN) == NULL)
    g_strlcpy (buf, "?", INET6_ADDRSTRLEN);
}

/* ---- CIDR blocks --------------------------------------------------------------- */

static const guint8 mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static gboolean
cidr_contains_addr (const EbCidr *cidr, const Addr *a)
{
  if (cidr->family == a->family)
    return prefix_match (a->addr, cidr->addr, cidr->prefix_len);
  if (cidr->family == AF_INET && memcmp (a->addr, mapped_prefix, 12) == 0)
    return prefix_match (a->addr + 12, cidr->addr, cidr->prefix_len);
  if (cidr->family == AF_INET6 && a->family == AF_INET) {
    guint8 m[16];
    memcpy (m, mapped_prefix, 12);
    memcpy (m + 12, a->addr, 4);
    return prefix_match (m, cidr->addr, cidr->prefix_len);
  }
  return FALSE;
}

static gboolean
cidr_contains_v4 (const EbCidr *cidr, const guint8 v4[4])
{
  Addr a = { .family = AF_INET };
  memcpy (a.addr, v4, 4);
  return cidr_contains_addr (cidr, &a);
}

gboolean
eb_policy_cidr_contains (const EbCidr *cidr, const struct sockaddr *sa)
{
  g_return_val_if_fail (cidr != NULL, FALSE);
  Addr a;
  return addr_load (sa, &a) && cidr_contains_addr (cidr, &a);
}

char *
eb_policy_cidr_to_string (const EbCidr *cidr)
{
  g_return_val_if_fail (cidr != NULL, NULL);
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop (cidr->family, cidr->addr, buf, sizeof buf) == NULL)
    return g_strdup ("?");
  return g_strdup_printf ("%s/%u", buf, cidr->prefix_len);
}

gboolean
eb_policy_cidr_parse (const char *text, EbCidr *out, GError **error)
{
  g_return_val_if_fail (out != NULL, FALSE);
  if (text == NULL || *text == '\0') {
    g_set_error (error, EB_ERROR, EB_ERROR_EMPTY, "empty network block");
    return FALSE;
  }
  const char *slash = strchr (text, '/');
  gsize alen = slash ? (gsize) (slash - text) : strlen (text);
  if (alen == 0) {
    g_set_error (error, EB_ERROR, EB_ERROR_MISSING, "network block \"%s\": no address before '/'", text);
    return FALSE;
  }
  char abuf[INET6_ADDRSTRLEN];
  if (alen >= sizeof abuf) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "network block \"%s\": not an IPv4 or IPv6 address", text);
    return FALSE;
  }
  memcpy (abuf, text, alen);
  abuf[alen] = '\0';

  EbCidr c = { 0 };
  c.family = memchr (abuf, ':', alen) ? AF_INET6 : AF_INET;
  if (inet_pton (c.family, abuf, c.addr) != 1) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "network block \"%s\": \"%s\" is not an %s address",
                 text, abuf, c.family == AF_INET ? "IPv4" : "IPv6");
    return FALSE;
  }
  guint max = c.family == AF_INET ? 32 : 128;
  c.prefix_len = max;
  if (slash) {
    const char *p = slash + 1;
    if (*p == '\0') {
      g_set_error (error, EB_ERROR, EB_ERROR_MISSING, "network block \"%s\": no prefix length after '/'", text);
      return FALSE;
    }
    gsize n = strlen (p);
    gboolean digits = n <= 3 && !(n > 1 && p[0] == '0');
    for (gsize i = 0; digits && i < n; i++)
      digits = g_ascii_isdigit (p[i]);
    if (!digits) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                   "network block \"%s\": prefix length \"%s\" is not a decimal number", text, p);
      return FALSE;
    }
    guint v = (guint) g_ascii_strtoull (p, NULL, 10);
    if (v > max) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                   "network block \"%s\": prefix length %u is above %u", text, v, max);
      return FALSE;
    }
    c.prefix_len = v;
  }
  /* clear host bits: "10.1.2.3/8" is 10.0.0.0/8 */
  for (guint bit = c.prefix_len; bit < max; bit++)
    c.addr[bit / 8] &= (guint8) ~(0x80u >> (bit % 8));
  *out = c;
  return TRUE;
}

/* ---- The policy ------------------------------------------------------------------ */

struct _EbPolicy {
  GArray *allow;              /* EbCidr */
  GArray *deny;               /* EbCidr */
  GArray *own;                /* Addr (port unused) */
  guint64 ports[65536 / 64];  /* bit set of allowed ports */
};

static void
policy_clear (gpointer data)
{
  EbPolicy *p = data;
  g_array_unref (p->allow);
  g_array_unref (p->deny);
  g_array_unref (p->own);
}

EbPolicy *
eb_policy_new (void)
{
  EbPolicy *p = g_atomic_rc_box_new0 (EbPolicy);
  p->allow = g_array_new (FALSE, FALSE, sizeof (EbCidr));
  p->deny = g_array_new (FALSE, FALSE, sizeof (EbCidr));
  p->own = g_array_new (FALSE, FALSE, sizeof (Addr));
  static const guint16 defaults[] = { 80, 443, 21 };
  eb_policy_set_allowed_ports (p, defaults, G_N_ELEMENTS (defaults));
  return p;
}

EbPolicy *
eb_policy_ref (EbPolicy *policy)
{
  g_return_val_if_fail (policy != NULL, NULL);
  return g_atomic_rc_box_acquire (policy);
}

void
eb_policy_unref (EbPolicy *policy)
{
  if (policy)
    g_atomic_rc_box_release_full (policy, policy_clear);
}

static void
check_cidr (const EbCidr *cidr)
{
  g_return_if_fail (cidr->family == AF_INET || cidr->family == AF_INET6);
  g_return_if_fail (cidr->prefix_len <= (cidr->family == AF_INET ? 32u : 128u));
}

void
eb_policy_add_allow (EbPolicy *policy, const EbCidr *cidr)
{
  g_return_if_fail (policy != NULL && cidr != NULL);
  check_cidr (cidr);
  g_array_append_val (policy->allow, *cidr);
}

void
eb_policy_add_deny (EbPolicy *policy, const EbCidr *cidr)
{
  g_return_if_fail (policy != NULL && cidr != NULL);
  check_cidr (cidr);
  g_array_append_val (policy->deny, *cidr);
}

void
eb_policy_add_own_address (EbPolicy *policy, const struct sockaddr *sa)
{
  g_return_if_fail (policy != NULL);
  Addr a;
  if (!addr_load (sa, &a))
    return;
  a.port = 0;
  g_array_append_val (policy->own, a);
}

void
eb_policy_set_allowed_ports (EbPolicy *policy, const guint16 *ports, gsize n_ports)
{
  g_return_if_fail (policy != NULL);
  g_return_if_fail (ports != NULL || n_ports == 0);
  memset (policy->ports, 0, sizeof policy->ports);
  for (gsize i = 0; i < n_ports; i++)
    if (ports[i] != 0)
      policy->ports[ports[i] / 64] |= G_GUINT64_CONSTANT (1) << (ports[i] % 64);
}

gboolean
eb_policy_port_allowed (const EbPolicy *policy, guint16 port)
{
  g_return_val_if_fail (policy != NULL, FALSE);
  return (policy->ports[port / 64] >> (port % 64)) & 1;
}

/* ---- The decision ------------------------------------------------------------------ */

static const EbCidr *
find_block (const GArray *list, const Addr *a, const guint8 *v4)
{
  for (guint i = 0; i < list->len; i++) {
    const EbCidr *c = &g_array_index (list, EbCidr, i);
    if (cidr_contains_addr (c, a) || (v4 && cidr_contains_v4 (c, v4)))
      return c;
  }
  return NULL;
}

static gboolean
is_own (const GArray *own, const Addr *a, const guint8 *v4)
{
  for (guint i = 0; i < own->len; i++) {
    const Addr *o = &g_array_index (own, Addr, i);
    EbCidr c = { .family = o->family, .prefix_len = o->family == AF_INET ? 32 : 128 };
    memcpy (c.addr, o->addr, 16);
    if (cidr_contains_addr (&c, a) || (v4 && cidr_contains_v4 (&c, v4)))
      return TRUE;
  }
  return FALSE;
}

EbPolicyVerdict
eb_policy_decide (const EbPolicy *policy, const struct sockaddr *sa,
                  EbPolicyDecision *d, char **why)
{
  g_return_val_if_fail (policy != NULL && d != NULL, EB_POLICY_REFUSED);
  memset (d, 0, sizeof *d);
  d->verdict = EB_POLICY_REFUSED;
  d->embedded_class = EB_ADDR_N;
  if (why)
    *why = NULL;

  Addr a;
  if (!addr_load (sa, &a)) {
    d->rule = EB_POLICY_RULE_NOT_IP;
    d->addr_class = d->reason_class = EB_ADDR_NOT_IP;
    if (why)
      *why = g_strdup ("refused: not an IPv4 or IPv6 socket address");
    return d->verdict;
  }
  d->port = a.port;
  d->addr_class = d->reason_class = classify (&a);
  guint8 v4[4];
  d->has_embedded = embedded_v4 (&a, d->addr_class, v4);
  if (d->has_embedded) {
    memcpy (&d->embedded, v4, 4);
    d->embedded_class = classify_v4 (v4);
  }
  const guint8 *emb = d->has_embedded ? v4 : NULL;

  char text[INET6_ADDRSTRLEN], etext[INET_ADDRSTRLEN] = "";
  addr_text (&a, text);
  g_autofree char *inside = NULL;   /* " (IPv4 a.b.c.d inside ...)" */
  if (emb) {
    inet_ntop (AF_INET, v4, etext, sizeof etext);
    inside = g_strdup_printf (" (IPv4 %s inside %s)", etext, classes[d->addr_class].text);
  }
  g_autofree char *port_text = a.port ? g_strdup_printf (" port %u", a.port) : g_strdup ("");

  /* 1. deny_networks: the address, its mapped twin, or what it embeds */
  const EbCidr *block = find_block (policy->deny, &a, emb);
  if (block) {
    d->rule = EB_POLICY_RULE_DENY_NETWORKS;
    d->network = *block;
    if (why) {
      g_autofree char *b = eb_policy_cidr_to_string (block);
      gboolean direct = cidr_contains_addr (block, &a);
      *why = g_strdup_printf ("refused address %s: denied by deny_networks %s%s", text, b,
                              direct ? "" : inside);
    }
    return d->verdict;
  }

  /* 2. allow_networks: the address or its mapped twin only, on any port */
  block = find_block (policy->allow, &a, NULL);
  if (block) {
    d->rule = EB_POLICY_RULE_ALLOW_NETWORKS;
    d->network = *block;
    d->verdict = EB_POLICY_ALLOWED;
    if (why) {
      g_autofree char *b = eb_policy_cidr_to_string (block);
      *why = g_strdup_printf ("allowed address %s%s: in allow_networks %s", text, port_text, b);
    }
    return d->verdict;
  }

  /* 3. global unicast, in the IPv6 form and in the embedded IPv4 address */
  gboolean emb_refused = emb && eb_policy_addr_class_is_refused (d->embedded_class);
  if (emb_refused || eb_policy_addr_class_is_refused (d->addr_class)) {
    d->rule = EB_POLICY_RULE_ADDRESS_CLASS;
    if (emb_refused)
      d->reason_class = d->embedded_class;
    if (why)
      *why = g_strdup_printf ("refused address %s: %s%s", text, classes[d->reason_class].text,
                              emb_refused ? inside : "");
    return d->verdict;
  }

  /* 4. not one of this host's own addresses */
  if (is_own (policy->own, &a, emb)) {
    d->rule = EB_POLICY_RULE_OWN_ADDRESS;
    if (why)
      *why = g_strdup_printf ("refused address %s: one of this host's own addresses%s", text,
                              emb ? inside : "");
    return d->verdict;
  }

  /* 5. the port, when known */
  if (a.port != 0 && !eb_policy_port_allowed (policy, a.port)) {
    d->rule = EB_POLICY_RULE_PORT;
    if (why)
      *why = g_strdup_printf ("refused port %u of %s", a.port, text);
    return d->verdict;
  }

  d->rule = EB_POLICY_RULE_DEFAULT;
  d->verdict = EB_POLICY_ALLOWED;
  if (why)
    *why = g_strdup_printf ("allowed address %s%s: %s%s%s", text, port_text,
                            classes[emb ? d->embedded_class : d->addr_class].text,
                            emb ? inside : "", a.port ? "" : " (port not yet known)");
  return d->verdict;
}

EbPolicyVerdict
eb_policy_check (const EbPolicy *policy, const struct sockaddr *sa, char **why)
{
  EbPolicyDecision d;
  return eb_policy_decide (policy, sa, &d, why);
}

/* ---- The one function with I/O ------------------------------------------------------ */

gboolean
eb_policy_add_host_addresses (EbPolicy *policy, GError **error)
{
  g_return_val_if_fail (policy != NULL, FALSE);
  struct ifaddrs *list = NULL;
  if (getifaddrs (&list) != 0) {
    int e = errno;
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "getifaddrs: %s", g_strerror (e));
    return FALSE;
  }
  for (const struct ifaddrs *i = list; i; i = i->ifa_next)
    if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
      eb_policy_add_own_address (policy, i->ifa_addr);
  freeifaddrs (list);
  return TRUE;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-policy.h - which numeric addresses and ports extbody may connect to.
 *
 * URLs come from hostile mail, so every connection is checked at the last
 * moment: libcurl's open-socket callback hands the numeric address it is about
 * to connect to (after DNS, after every redirect) to eb_policy_check(), and the
 * socket is only opened on EB_POLICY_ALLOWED. Checking the sockaddr rather than
 * the URL's host text makes every textual trick (0x7f.1, 2130706433, 017700000001,
 * 127.1, [::ffff:127.0.0.1], DNS names pointing inwards, DNS rebinding) moot:
 * they all arrive here as the same four or sixteen bytes.
 *
 * The module is pure (no DNS, no sockets, no files) except for
 * eb_policy_add_host_addresses(), which calls getifaddrs(3) once at start-up.
 *
 * The decision, in this order (the first rule that applies decides):
 *
 *  1. deny_networks: an address inside any deny block is refused, on any port.
 *     Deny wins over everything, including allow_networks. A deny block matches
 *     the address, its IPv4-mapped twin, and any IPv4 address embedded in it
 *     (IPv4-compatible, NAT64, 6to4, Teredo; see eb_policy_addr_embedded_ipv4()), so
 *     denying 203.0.113.0/24 also refuses 2002:cb00:7105:: and 64:ff9b::cb00:7105.
 *  2. allow_networks: an address inside an allow block is allowed on ANY port,
 *     whatever its class and even if it is one of the host's own addresses; this
 *     is how tests reach a server on 127.0.0.1:PORT. An allow block matches the
 *     address and its IPv4-mapped twin only, never an IPv4 address embedded by
 *     NAT64, 6to4, Teredo or IPv4-compatible forms (those are other destinations,
 *     reached through a gateway); to allow those, allow the IPv6 block itself.
 *  3. address class: the address must be global unicast (eb_policy_addr_classify()),
 *     and if it embeds an IPv4 address, that IPv4 address must be global unicast
 *     too. IPv4-mapped, NAT64 (64:ff9b::/96), 6to4 and Teredo addresses are not
 *     refused for their own sake: their embedded IPv4 address decides. Every other
 *     class is refused whatever it embeds.
 *  4. own addresses: the address (or its embedded IPv4 address) must not be one
 *     of the host's own addresses (eb_policy_add_own_address()).
 *  5. port: the port must be one of the allowed ports (default 80, 443, 21).
 *     The port is read from sin_port / sin6_port; a port of 0 means "not yet
 *     known" and is not checked, so a caller may vet an address before it knows
 *     the port (the open-socket callback always knows it).
 *
 * Reasons are one line: "refused address 127.0.0.1: loopback", "refused port
 * 8080 of 93.184.216.34", "refused address 203.0.113.7: denied by deny_networks
 * 203.0.113.0/24". When both the IPv6 form and its embedded IPv4 address are
 * refused, the reason names the embedded IPv4 class, which is the more telling
 * one: "refused address ::ffff:127.0.0.1: loopback (IPv4 127.0.0.1 inside
 * IPv4-mapped IPv6)". When only the IPv6 form is refused it names the IPv6 class
 * ("refused address ::8.8.8.8: deprecated IPv4-compatible IPv6").
 *
 * Thread safety: set an EbPolicy up in one thread (eb_policy_new(), the add and
 * set functions), then never change it again; after that it is immutable and
 * any number of threads may call eb_policy_check() on it concurrently without
 * locking. Reference counting is atomic.
 */
#pragma once
#include <glib.h>
#include <netinet/in.h>
#include <sys/socket.h>

G_BEGIN_DECLS

/* ---- Address classes ------------------------------------------------------ */

/* What an address is, most specific first (a metadata address is reported as
 * EB_ADDR_METADATA, not as the link-local or shared block around it). */
typedef enum {
  EB_ADDR_GLOBAL = 0,       /* global unicast: everything not listed below */
  EB_ADDR_UNSPECIFIED,      /* 0.0.0.0/8 ("this network"), ::/128 */
  EB_ADDR_LOOPBACK,         /* 127.0.0.0/8, ::1/128 */
  EB_ADDR_PRIVATE,          /* 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 */
  EB_ADDR_SHARED,           /* 100.64.0.0/10 (carrier-grade NAT) */
  EB_ADDR_LINK_LOCAL,       /* 169.254.0.0/16, fe80::/10 */
  EB_ADDR_METADATA,         /* cloud metadata services: 169.254.169.254, 169.254.170.2,
                             * 100.100.100.200, 192.0.0.192, 168.63.129.16, fd00:ec2::254 */
  EB_ADDR_IETF_PROTOCOL,    /* 192.0.0.0/24, 2001::/23 (less the blocks named below) */
  EB_ADDR_DOCUMENTATION,    /* 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24,
                             * 2001:db8::/32, 3fff::/20 */
  EB_ADDR_BENCHMARKING,     /* 198.18.0.0/15, 2001:2::/48 */
  EB_ADDR_6TO4_RELAY,       /* 192.88.99.0/24 (6to4 relay anycast, deprecated) */
  EB_ADDR_MULTICAST,        /* 224.0.0.0/4, ff00::/8 */
  EB_ADDR_RESERVED,         /* 240.0.0.0/4; IPv6 outside 2000::/3 not listed here */
  EB_ADDR_BROADCAST,        /* 255.255.255.255/32 */
  EB_ADDR_IPV4_MAPPED,      /* ::ffff:0:0/96; embeds IPv4 (the embedded address decides) */
  EB_ADDR_IPV4_COMPATIBLE,  /* ::/96 less :: and ::1 (deprecated); embeds IPv4 */
  EB_ADDR_NAT64,            /* 64:ff9b::/96; embeds IPv4 (the embedded address decides) */
  EB_ADDR_NAT64_LOCAL,      /* 64:ff9b:1::/48 (local use, not global); embeds IPv4 (/96 form) */
  EB_ADDR_6TO4,             /* 2002::/16; embeds IPv4 in bits 16..47 (it decides) */
  EB_ADDR_TEREDO,           /* 2001::/32; embeds the client IPv4, inverted (it decides) */
  EB_ADDR_ORCHID,           /* 2001:10::/28, 2001:20::/28 */
  EB_ADDR_DISCARD,          /* 100::/64 */
  EB_ADDR_UNIQUE_LOCAL,     /* fc00::/7 */
  EB_ADDR_SITE_LOCAL,       /* fec0::/10 (deprecated) */
  EB_ADDR_NOT_IP,           /* NULL, or neither AF_INET nor AF_INET6 */
  EB_ADDR_N
} EbAddrClass;

/* Classify @sa, which must point to a complete struct sockaddr_in or
 * struct sockaddr_in6 as its sa_family says (only the address is read). */
EbAddrClass eb_policy_addr_classify (const struct sockaddr *sa);

/* (transfer none): stable token, e.g. "loopback", "cloud-metadata". */
const char *eb_policy_addr_class_token (EbAddrClass c);
/* (transfer none): text for people, e.g. "private network". */
const char *eb_policy_addr_class_text (EbAddrClass c);
/* TRUE when the default rules refuse every address of this class, whatever it
 * embeds. FALSE for EB_ADDR_GLOBAL and for the classes whose embedded IPv4
 * address decides (IPv4-mapped, NAT64, 6to4, Teredo). */
gboolean eb_policy_addr_class_is_refused (EbAddrClass c);

/* The IPv4 address embedded in an IPv6 address of class IPv4-mapped,
 * IPv4-compatible, NAT64, NAT64 local-use (last 32 bits, the /96 form), 6to4
 * (bits 16..47) or Teredo (last 32 bits XOR 0xffffffff). Returns FALSE, leaving
 * @out alone, for every other address, including all AF_INET ones. */
gboolean eb_policy_addr_embedded_ipv4 (const struct sockaddr *sa, struct in_addr *out);

/* ---- CIDR blocks ------------------------------------------------------------ */

typedef struct {
  int    family;       /* AF_INET or AF_INET6 */
  guint  prefix_len;   /* 0..32 for AF_INET, 0..128 for AF_INET6 */
  guint8 addr[16];     /* network byte order, host bits zero; IPv4 in addr[0..3] */
} EbCidr;

/* Parse "10.0.0.0/8", "::1/128", "2001:db8::/32"; a bare address is a /32 or
 * /128. The address part goes through inet_pton(3), so IPv4 is strictly four
 * decimal octets without leading zeros and no zone ("%eth0") is accepted. The
 * prefix length is decimal, without sign or leading zeros. Host bits set below
 * the prefix ("10.1.2.3/8") are accepted and cleared (the block is 10.0.0.0/8).
 * No white space is allowed anywhere.
 * Errors (EB_ERROR): EMPTY for NULL or "", MISSING for "/8" (no address) or
 * "10.0.0.0/" (no prefix length), SYNTAX for anything else that is wrong,
 * including a prefix length above 32 (IPv4) or 128 (IPv6).
 * @out is written only on success. */
gboolean eb_policy_cidr_parse (const char *text, EbCidr *out, GError **error);

/* TRUE when @sa's address is inside @cidr. An address and its IPv4-mapped form
 * (::ffff:a.b.c.d) are the same destination and match the same blocks, in
 * either direction; no other embedded form matches. Ports are ignored. */
gboolean eb_policy_cidr_contains (const EbCidr *cidr, const struct sockaddr *sa);

/* "10.0.0.0/8", "2001:db8::/32". Returns: (transfer full). */
char *eb_policy_cidr_to_string (const EbCidr *cidr);

/* ---- The policy ------------------------------------------------------------- */

typedef struct _EbPolicy EbPolicy;

/* Returns: (transfer full): the default policy: no deny or allow blocks, no own
 * addresses, allowed ports 80, 443 and 21; so only global unicast is allowed. */
EbPolicy *eb_policy_new (void);
EbPolicy *eb_policy_ref (EbPolicy *policy);
void eb_policy_unref (EbPolicy *policy);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbPolicy, eb_policy_unref)

/* Set-up: call before the policy is shared; each copies its argument. */
void eb_policy_add_allow (EbPolicy *policy, const EbCidr *cidr);
void eb_policy_add_deny (EbPolicy *policy, const EbCidr *cidr);
/* Refuse @sa's address (port ignored) even when it is global unicast. */
void eb_policy_add_own_address (EbPolicy *policy, const struct sockaddr *sa);
/* Replace the allowed ports. Port 0 in @ports is ignored; an empty list allows
 * no port (only port-0 checks and allow_networks then pass). */
void eb_policy_set_allowed_ports (EbPolicy *policy, const guint16 *ports, gsize n_ports);

/* TRUE when @port (host byte order) is one of the allowed ports. */
gboolean eb_policy_port_allowed (const EbPolicy *policy, guint16 port);

/* The one function of this module with I/O: add every IPv4 and IPv6 address
 * getifaddrs(3) reports for this host as an own address. Call it once at
 * start-up. Returns: FALSE with EB_ERROR_IO when getifaddrs fails. */
gboolean eb_policy_add_host_addresses (EbPolicy *policy, GError **error);

/* ---- The decision ----------------------------------------------------------- */

typedef enum {
  EB_POLICY_ALLOWED,
  EB_POLICY_REFUSED,
} EbPolicyVerdict;

/* Which rule decided. */
typedef enum {
  EB_POLICY_RULE_NOT_IP,          /* refused: NULL or not AF_INET / AF_INET6 */
  EB_POLICY_RULE_DENY_NETWORKS,   /* refused: inside a deny block (rule 1) */
  EB_POLICY_RULE_ALLOW_NETWORKS,  /* allowed: inside an allow block (rule 2) */
  EB_POLICY_RULE_ADDRESS_CLASS,   /* refused: not global unicast (rule 3) */
  EB_POLICY_RULE_OWN_ADDRESS,     /* refused: one of the host's addresses (rule 4) */
  EB_POLICY_RULE_PORT,            /* refused: port not allowed (rule 5) */
  EB_POLICY_RULE_DEFAULT,         /* allowed: passed rules 3 to 5 */
} EbPolicyRule;

typedef struct {
  EbPolicyVerdict verdict;
  EbPolicyRule    rule;
  EbAddrClass     addr_class;     /* class of the address as given */
  gboolean        has_embedded;   /* an IPv4 address is embedded (see above) */
  struct in_addr  embedded;       /* ... that address, when has_embedded */
  EbAddrClass     embedded_class; /* ... and its class; EB_ADDR_N when none */
  EbAddrClass     reason_class;   /* the class the reason names (rule 3), else addr_class */
  EbCidr          network;        /* the block that matched (rules 1 and 2) */
  guint16         port;           /* host byte order; 0 = not known */
} EbPolicyDecision;

/* Decide whether a connection to @sa (a complete sockaddr_in or sockaddr_in6)
 * may be made. @why: (out) (optional) (transfer full): a one-line reason, for
 * allowed addresses too ("allowed address 93.184.216.34 port 443: global
 * unicast"). Safe to call from any thread once set-up is over. */
EbPolicyVerdict eb_policy_check (const EbPolicy *policy, const struct sockaddr *sa, char **why);

/* The same decision with its details; @decision is always filled. */
EbPolicyVerdict eb_policy_decide (const EbPolicy *policy, const struct sockaddr *sa,
                                  EbPolicyDecision *decision, char **why);

G_END_DECLS

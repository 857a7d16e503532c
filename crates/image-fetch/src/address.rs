//! Which IP addresses an image may come from: one table of refused prefixes, and the IPv6
//! forms that carry an IPv4 address inside them.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not a public internet address, so no image is fetched from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressClass {
    /// `0.0.0.0` or `::`.
    Unspecified,
    /// `0.0.0.0/8` other than `0.0.0.0`: "this network" (RFC 791).
    ThisNetwork,
    /// `127.0.0.0/8` or `::1`.
    Loopback,
    /// `10.0.0.0/8`, `172.16.0.0/12` or `192.168.0.0/16` (RFC 1918).
    Private,
    /// `100.64.0.0/10`, the carrier-grade NAT range (RFC 6598).
    SharedAddressSpace,
    /// `169.254.0.0/16` or `fe80::/10`.
    LinkLocal,
    /// `192.0.0.0/24` or `2001::/23`: IETF protocol assignments.
    ProtocolAssignment,
    /// `192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`, `2001:db8::/32` or `3fff::/20`.
    Documentation,
    /// `198.18.0.0/15` or `2001:2::/48` (RFC 2544, RFC 5180).
    Benchmarking,
    /// `224.0.0.0/4` or `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `240.0.0.0/4`, the deprecated 6to4 relay anycast `192.88.99.0/24`, or IPv6 outside
    /// the global unicast range `2000::/3`.
    Reserved,
    /// `fc00::/7` (RFC 4193).
    UniqueLocal,
    /// `fec0::/10`, the deprecated site-local range.
    SiteLocal,
    /// `100::/64`, the discard-only range (RFC 6666).
    DiscardOnly,
    /// `2001::/32`: a Teredo tunnel, whose real destination is not checkable.
    Teredo,
    /// `64:ff9b:1::/48`, the local-use NAT64 prefix (RFC 8215), whose translator is local.
    LocalNat64,
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unspecified => "the unspecified address",
            Self::ThisNetwork => "a \"this network\" address",
            Self::Loopback => "a loopback address",
            Self::Private => "a private address",
            Self::SharedAddressSpace => "a carrier-grade NAT address",
            Self::LinkLocal => "a link-local address",
            Self::ProtocolAssignment => "an IETF protocol assignment address",
            Self::Documentation => "a documentation address",
            Self::Benchmarking => "a benchmarking address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "the broadcast address",
            Self::Reserved => "a reserved address",
            Self::UniqueLocal => "a unique local address",
            Self::SiteLocal => "a site-local address",
            Self::DiscardOnly => "a discard-only address",
            Self::Teredo => "a Teredo tunnel address",
            Self::LocalNat64 => "a local-use NAT64 address",
        })
    }
}

/// Decides whether an image may be fetched from `address`.
///
/// An IPv6 address that embeds an IPv4 address (IPv4-mapped `::ffff:0:0/96`,
/// IPv4-compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged by the IPv4
/// address inside it. Every other address is judged by the most specific refused prefix it
/// falls in; an address in none of them is public.
///
/// # Errors
///
/// The [`AddressClass`] of an address that is not public.
///
/// ```
/// use std::net::IpAddr;
/// use yetibot_image_fetch::{AddressClass, classify};
///
/// let ip = |s: &str| s.parse::<IpAddr>().expect("an address");
/// assert_eq!(classify(ip("93.184.216.34")), Ok(()));
/// assert_eq!(classify(ip("10.1.2.3")), Err(AddressClass::Private));
/// assert_eq!(classify(ip("::ffff:127.0.0.1")), Err(AddressClass::Loopback));
/// assert_eq!(classify(ip("2002:a9fe:a9fe::1")), Err(AddressClass::LinkLocal));
/// ```
pub fn classify(address: IpAddr) -> Result<(), AddressClass> {
    match address {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match embedded_ipv4(v6) {
            Some(v4) => classify_v4(v4),
            None => {
                let rows = V6.iter().map(|&(p, len, class)| (p.to_bits(), len, class));
                refused(rows, (v6.to_bits(), 128))
            }
        },
    }
}

fn classify_v4(v4: Ipv4Addr) -> Result<(), AddressClass> {
    let rows = V4
        .iter()
        .map(|&(p, len, class)| (u128::from(p.to_bits()), len, class));
    refused(rows, (u128::from(v4.to_bits()), 32))
}

/// Refused IPv4 prefixes. The most specific matching row decides, so a narrower range
/// inside a wider one (`0.0.0.0/32` inside `0.0.0.0/8`) needs only its own row.
const V4: &[(Ipv4Addr, u8, AddressClass)] = {
    use AddressClass::*;
    &[
        (Ipv4Addr::new(0, 0, 0, 0), 8, ThisNetwork),
        (Ipv4Addr::new(0, 0, 0, 0), 32, Unspecified),
        (Ipv4Addr::new(10, 0, 0, 0), 8, Private),
        (Ipv4Addr::new(100, 64, 0, 0), 10, SharedAddressSpace),
        (Ipv4Addr::new(127, 0, 0, 0), 8, Loopback),
        (Ipv4Addr::new(169, 254, 0, 0), 16, LinkLocal),
        (Ipv4Addr::new(172, 16, 0, 0), 12, Private),
        (Ipv4Addr::new(192, 0, 0, 0), 24, ProtocolAssignment),
        (Ipv4Addr::new(192, 0, 2, 0), 24, Documentation),
        (Ipv4Addr::new(192, 88, 99, 0), 24, Reserved),
        (Ipv4Addr::new(192, 168, 0, 0), 16, Private),
        (Ipv4Addr::new(198, 18, 0, 0), 15, Benchmarking),
        (Ipv4Addr::new(198, 51, 100, 0), 24, Documentation),
        (Ipv4Addr::new(203, 0, 113, 0), 24, Documentation),
        (Ipv4Addr::new(224, 0, 0, 0), 4, Multicast),
        (Ipv4Addr::new(240, 0, 0, 0), 4, Reserved),
        (Ipv4Addr::new(255, 255, 255, 255), 32, Broadcast),
    ]
};

/// Refused IPv6 prefixes, consulted after the IPv4-embedding forms of [`EMBEDDINGS`].
/// Everything outside `2000::/3` is refused as reserved: no image host lives there.
const V6: &[(Ipv6Addr, u8, AddressClass)] = {
    use AddressClass::*;
    &[
        (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 128, Unspecified),
        (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1), 128, Loopback),
        (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 3, Reserved),
        (
            Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
            48,
            LocalNat64,
        ),
        (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64, DiscardOnly),
        (
            Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
            23,
            ProtocolAssignment,
        ),
        (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, Teredo),
        (Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0), 48, Benchmarking),
        (
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
            32,
            Documentation,
        ),
        (
            Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
            20,
            Documentation,
        ),
        (Ipv6Addr::new(0x4000, 0, 0, 0, 0, 0, 0, 0), 2, Reserved),
        (Ipv6Addr::new(0x8000, 0, 0, 0, 0, 0, 0, 0), 1, Reserved),
        (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, UniqueLocal),
        (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, LinkLocal),
        (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, SiteLocal),
        (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, Multicast),
    ]
};

/// IPv6 prefixes whose addresses carry an IPv4 address, and the bit at which those 32 bits
/// start: IPv4-mapped, IPv4-compatible (other than `::` and `::1`), NAT64 well-known
/// prefix, 6to4.
const EMBEDDINGS: &[(Ipv6Addr, u8, u32)] = &[
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96, 96),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 96, 96),
    (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, 96),
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, 16),
];

/// The IPv4 address an IPv6 address carries, if it has one of the forms of [`EMBEDDINGS`].
pub(crate) fn embedded_ipv4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = v6.to_bits();
    if bits <= 1 {
        // `::` and `::1` are IPv6's own unspecified and loopback addresses.
        return None;
    }
    EMBEDDINGS
        .iter()
        .find(|&&(prefix, len, _)| in_prefix(bits, prefix.to_bits(), len, 128))
        .map(|&(_, _, start)| {
            let shifted = bits.checked_shr(128 - 32 - start).unwrap_or(0);
            Ipv4Addr::from_bits((shifted & 0xffff_ffff) as u32)
        })
}

/// The class of the longest refused prefix among `rows` that holds `address` (its bits and
/// bit width).
fn refused(
    rows: impl Iterator<Item = (u128, u8, AddressClass)>,
    (address, width): (u128, u32),
) -> Result<(), AddressClass> {
    match rows
        .filter(|&(prefix, len, _)| in_prefix(address, prefix, len, width))
        .max_by_key(|&(_, len, _)| len)
    {
        Some((_, _, class)) => Err(class),
        None => Ok(()),
    }
}

/// Whether the first `len` of the `width` bits of `address` equal those of `prefix`.
fn in_prefix(address: u128, prefix: u128, len: u8, width: u32) -> bool {
    let host_bits = width.saturating_sub(u32::from(len));
    (address ^ prefix).checked_shr(host_bits).unwrap_or(0) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(address: &str, expected: Result<(), AddressClass>) {
        let ip: IpAddr = address.parse().expect("a test address");
        assert_eq!(classify(ip), expected, "{address}");
    }

    #[test]
    fn ipv4_ranges() {
        use AddressClass::*;
        check("0.0.0.0", Err(Unspecified));
        check("0.1.2.3", Err(ThisNetwork));
        check("10.0.0.1", Err(Private));
        check("100.64.0.1", Err(SharedAddressSpace));
        check("100.127.255.255", Err(SharedAddressSpace));
        check("100.128.0.0", Ok(()));
        check("127.0.0.1", Err(Loopback));
        check("127.255.255.254", Err(Loopback));
        check("169.254.169.254", Err(LinkLocal));
        check("172.15.255.255", Ok(()));
        check("172.16.0.1", Err(Private));
        check("172.31.255.255", Err(Private));
        check("172.32.0.0", Ok(()));
        check("192.0.0.8", Err(ProtocolAssignment));
        check("192.0.2.1", Err(Documentation));
        check("192.88.99.1", Err(Reserved));
        check("192.168.1.1", Err(Private));
        check("198.18.0.1", Err(Benchmarking));
        check("198.19.255.255", Err(Benchmarking));
        check("198.20.0.0", Ok(()));
        check("198.51.100.7", Err(Documentation));
        check("203.0.113.9", Err(Documentation));
        check("224.0.0.1", Err(Multicast));
        check("239.255.255.250", Err(Multicast));
        check("240.0.0.1", Err(Reserved));
        check("255.255.255.254", Err(Reserved));
        check("255.255.255.255", Err(Broadcast));
        check("1.1.1.1", Ok(()));
        check("93.184.216.34", Ok(()));
        check("223.255.255.255", Ok(()));
    }

    #[test]
    fn ipv6_ranges() {
        use AddressClass::*;
        check("::", Err(Unspecified));
        check("::1", Err(Loopback));
        check("::2:0:0:1", Err(Reserved));
        check("::ffff:0:7f00:1", Err(Reserved));
        check("100::1", Err(DiscardOnly));
        check("100:0:0:1::1", Err(Reserved));
        check("2001::1", Err(Teredo));
        check("2001:0:4136:e378:8000:63bf:3fff:fdd2", Err(Teredo));
        check("2001:2::1", Err(Benchmarking));
        check("2001:1::1", Err(ProtocolAssignment));
        check("2001:db8::1", Err(Documentation));
        check("3fff::1", Err(Documentation));
        check("3fff:fff::1", Err(Documentation));
        check("3fff:1000::1", Ok(()));
        check("4000::1", Err(Reserved));
        check("fc00::1", Err(UniqueLocal));
        check("fd12:3456::1", Err(UniqueLocal));
        check("fe80::1", Err(LinkLocal));
        check("febf::1", Err(LinkLocal));
        check("fec0::1", Err(SiteLocal));
        check("ff02::1", Err(Multicast));
        check("64:ff9b:1::1", Err(LocalNat64));
        check("2606:4700:4700::1111", Ok(()));
        check("2a00:1450:4001:81b::200e", Ok(()));
    }

    #[test]
    fn ipv6_forms_carrying_ipv4_are_judged_by_the_ipv4_address() {
        use AddressClass::*;
        check("::ffff:127.0.0.1", Err(Loopback));
        check("::ffff:10.0.0.1", Err(Private));
        check("::ffff:93.184.216.34", Ok(()));
        check("::127.0.0.1", Err(Loopback));
        check("::169.254.169.254", Err(LinkLocal));
        check("::0.0.0.2", Err(ThisNetwork));
        check("::8.8.8.8", Ok(()));
        check("64:ff9b::127.0.0.1", Err(Loopback));
        check("64:ff9b::192.168.0.1", Err(Private));
        check("64:ff9b::8.8.8.8", Ok(()));
        check("2002:7f00:1::", Err(Loopback));
        check("2002:a9fe:a9fe:1::1", Err(LinkLocal));
        check("2002:c0a8:101::1", Err(Private));
        check("2002:808:808::1", Ok(()));
    }

    #[test]
    fn every_table_row_is_a_clean_prefix() {
        for &(prefix, len, class) in V4 {
            assert!(len <= 32, "{prefix}/{len}");
            let host_mask = u32::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            assert_eq!(prefix.to_bits() & host_mask, 0, "{prefix}/{len} {class:?}");
        }
        for &(prefix, len, class) in V6 {
            assert!(len <= 128, "{prefix}/{len}");
            let host_mask = u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            assert_eq!(prefix.to_bits() & host_mask, 0, "{prefix}/{len} {class:?}");
        }
    }

    /// An address inside `prefix/len` with random host bits.
    fn inside(prefix: u128, len: u8, width: u32, random: u128) -> u128 {
        let host_mask = (u128::MAX >> (128 - width))
            .checked_shr(u32::from(len) + 128 - width)
            .unwrap_or(0);
        prefix | (random & host_mask)
    }

    /// The class the most specific row holding `address` gives, among rows at least `len`
    /// long: what `classify` must answer for an address drawn from a row of length `len`.
    fn allowed_classes_v4(address: u32, len: u8) -> Vec<AddressClass> {
        V4.iter()
            .filter(|&&(p, l, _)| l >= len && in_prefix(address.into(), p.to_bits().into(), l, 32))
            .map(|&(_, _, class)| class)
            .collect()
    }

    fn public_v4() -> impl Strategy<Value = Ipv4Addr> {
        any::<u32>().prop_map(Ipv4Addr::from_bits).prop_filter(
            "outside every refused prefix",
            |a| {
                V4.iter()
                    .all(|&(p, l, _)| !in_prefix(a.to_bits().into(), p.to_bits().into(), l, 32))
            },
        )
    }

    fn refused_v4() -> impl Strategy<Value = Ipv4Addr> {
        (0..V4.len(), any::<u32>()).prop_map(|(row, random)| {
            let (prefix, len, _) = V4[row];
            let bits = inside(prefix.to_bits().into(), len, 32, random.into());
            Ipv4Addr::from_bits(bits as u32)
        })
    }

    proptest! {
        #[test]
        fn every_address_in_a_refused_ipv4_prefix_is_refused_with_its_class(
            row in 0..V4.len(),
            random in any::<u32>(),
        ) {
            let (prefix, len, _) = V4[row];
            let address = inside(prefix.to_bits().into(), len, 32, random.into()) as u32;
            let classes = allowed_classes_v4(address, len);
            let result = classify(IpAddr::V4(Ipv4Addr::from_bits(address)));
            prop_assert!(matches!(result, Err(c) if classes.contains(&c)), "{result:?} {classes:?}");
            // The row's own class, unless a narrower row inside it decides.
            if classes.len() == 1 {
                prop_assert_eq!(result, Err(V4[row].2));
            }
        }

        #[test]
        fn every_address_in_a_refused_ipv6_prefix_is_refused_with_its_class(
            row in 0..V6.len(),
            random in any::<u128>(),
        ) {
            let (prefix, len, _) = V6[row];
            let bits = inside(prefix.to_bits(), len, 128, random);
            let address = Ipv6Addr::from_bits(bits);
            let result = classify(IpAddr::V6(address));
            match embedded_ipv4(address) {
                Some(v4) => prop_assert_eq!(result, classify(IpAddr::V4(v4))),
                None => {
                    let classes: Vec<AddressClass> = V6
                        .iter()
                        .filter(|&&(p, l, _)| l >= len && in_prefix(bits, p.to_bits(), l, 128))
                        .map(|&(_, _, class)| class)
                        .collect();
                    prop_assert!(matches!(result, Err(c) if classes.contains(&c)), "{address} {result:?}");
                    if classes.len() == 1 {
                        prop_assert_eq!(result, Err(V6[row].2));
                    }
                }
            }
        }

        #[test]
        fn ipv6_forms_of_a_refused_ipv4_address_are_refused(v4 in refused_v4(), subnet in any::<u16>(), iid in any::<u64>()) {
            let n = u128::from(v4.to_bits());
            let forms = [
                v4.to_ipv6_mapped(),
                Ipv6Addr::from_bits(n),
                Ipv6Addr::from_bits(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0).to_bits() | n),
                Ipv6Addr::from_bits(
                    (0x2002u128 << 112) | (n << 80) | (u128::from(subnet) << 64) | u128::from(iid),
                ),
            ];
            for form in forms {
                prop_assert!(classify(IpAddr::V6(form)).is_err(), "{form} carries {v4}");
            }
            // The IPv4-compatible form of 0.0.0.0 and 0.0.0.1 is `::` and `::1`, refused as
            // IPv6's own addresses; every other form keeps the IPv4 class.
            prop_assert_eq!(classify(IpAddr::V6(v4.to_ipv6_mapped())), classify(IpAddr::V4(v4)));
        }

        #[test]
        fn ipv6_forms_of_a_public_ipv4_address_pass(v4 in public_v4()) {
            let n = u128::from(v4.to_bits());
            prop_assert_eq!(classify(IpAddr::V4(v4)), Ok(()));
            prop_assert_eq!(classify(IpAddr::V6(v4.to_ipv6_mapped())), Ok(()));
            prop_assert_eq!(
                classify(IpAddr::V6(Ipv6Addr::from_bits((0x2002u128 << 112) | (n << 80) | 1))),
                Ok(())
            );
        }

        #[test]
        fn public_ipv6_addresses_pass(low in any::<u128>()) {
            // Everything outside 2000::/3 is refused, so draw from it.
            let bits = (0b001u128 << 125) | (low >> 3);
            let address = Ipv6Addr::from_bits(bits);
            let listed = V6.iter().any(|&(p, l, _)| in_prefix(bits, p.to_bits(), l, 128))
                || embedded_ipv4(address).is_some();
            prop_assume!(!listed);
            prop_assert_eq!(classify(IpAddr::V6(address)), Ok(()));
        }

        #[test]
        fn classify_never_panics(address in any::<IpAddr>()) {
            let _ = classify(address);
        }
    }
}

//! The spec's random generators (clause 4.3.2): uniform ranges, NURand,
//! last names from syllables, and random strings.

use rand::Rng;

use super::schema::{LastName, Text};

/// The run-time constants `C` of NURand (clause 2.1.6), one per use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NuRandConstants {
    /// `C` for `C_LAST` (range 0 to 255).
    pub c_last: u32,
    /// `C` for `C_ID` (range 0 to 1023).
    pub c_id: u32,
    /// `C` for `OL_I_ID` (range 0 to 8191).
    pub ol_i_id: u32,
}

impl NuRandConstants {
    /// Constants drawn at random (the loader's).
    pub fn generate(rng: &mut impl Rng) -> Self {
        NuRandConstants {
            c_last: rng.random_range(0..=255),
            c_id: rng.random_range(0..=1023),
            ol_i_id: rng.random_range(0..=8191),
        }
    }

    /// Constants for a run against a database loaded with `self`: `C_LAST`
    /// differs from the load's by 65 to 119, but neither 96 nor 112
    /// (clause 2.1.6.1); the others are drawn afresh.
    pub fn for_run(&self, rng: &mut impl Rng) -> Self {
        let c_last = loop {
            let c: u32 = rng.random_range(0..=255);
            let delta = c.abs_diff(self.c_last);
            if (65..=119).contains(&delta) && delta != 96 && delta != 112 {
                break c;
            }
        };
        NuRandConstants {
            c_last,
            ..Self::generate(rng)
        }
    }
}

/// `NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x`.
#[inline]
pub fn nurand(rng: &mut impl Rng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    (((rng.random_range(0..=a) | rng.random_range(x..=y)) + c) % (y - x + 1)) + x
}

const SYLLABLES: [&[u8]; 10] = [
    b"BAR", b"OUGHT", b"ABLE", b"PRI", b"PRES", b"ESE", b"ANTI", b"CALLY", b"ATION", b"EING",
];

/// The last name of number `n` (0 to 999): the syllables of its three
/// decimal digits (clause 4.3.2.3).
pub fn last_name(n: u32) -> LastName {
    debug_assert!(n < 1000);
    let mut name = LastName::EMPTY;
    for digit in [n / 100, n / 10 % 10, n % 10] {
        name.push(SYLLABLES[digit as usize]);
    }
    name
}

const ALPHANUMERIC: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Fills `out` with random letters and digits.
pub fn fill_alphanumeric(rng: &mut impl Rng, out: &mut [u8]) {
    for b in out {
        *b = ALPHANUMERIC[rng.random_range(0..ALPHANUMERIC.len())];
    }
}

/// A random a-string of `min` to `max` characters (`max <= N`).
pub fn a_string<const N: usize>(rng: &mut impl Rng, min: usize, max: usize) -> Text<N> {
    let mut buf = [0u8; N];
    let len = rng.random_range(min..=max.min(N));
    fill_alphanumeric(rng, &mut buf[..len]);
    Text::new(&buf[..len])
}

/// A random a-string of `min` to `max` characters, 10% of which hold
/// `"ORIGINAL"` at a random position (`I_DATA`, `S_DATA`); also says
/// whether it does.
pub fn data_string<const N: usize>(rng: &mut impl Rng, min: usize, max: usize) -> (Text<N>, bool) {
    let mut buf = [0u8; N];
    let len = rng.random_range(min..=max.min(N));
    fill_alphanumeric(rng, &mut buf[..len]);
    let original = rng.random_range(0..10) == 0 && len >= 8;
    if original {
        let at = rng.random_range(0..=len - 8);
        buf[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
    let text = Text::new(&buf[..len]);
    (text, text.contains(b"ORIGINAL"))
}

/// A fixed-length a-string.
pub fn fixed_a_string<const N: usize>(rng: &mut impl Rng) -> [u8; N] {
    let mut buf = [0u8; N];
    fill_alphanumeric(rng, &mut buf);
    buf
}

/// A fixed-length n-string (random digits).
pub fn n_string<const N: usize>(rng: &mut impl Rng) -> [u8; N] {
    let mut buf = [0u8; N];
    for b in &mut buf {
        *b = b'0' + rng.random_range(0..10u8);
    }
    buf
}

/// A ZIP code: four random digits and `"11111"` (clause 4.3.2.7).
pub fn zip(rng: &mut impl Rng) -> [u8; 9] {
    let mut z = *b"000011111";
    let digits: [u8; 4] = n_string(rng);
    z[..4].copy_from_slice(&digits);
    z
}

/// Two random letters (a state).
pub fn state(rng: &mut impl Rng) -> [u8; 2] {
    [rng.random_range(b'A'..=b'Z'), rng.random_range(b'A'..=b'Z')]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn last_names_follow_the_syllables_and_are_distinct() {
        assert_eq!(last_name(0).as_bytes(), b"BARBARBAR");
        assert_eq!(last_name(371).as_bytes(), b"PRICALLYOUGHT");
        assert_eq!(last_name(999).as_bytes(), b"EINGEINGEING");
        let mut all: Vec<_> = (0..1000).map(last_name).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 1000);
    }

    #[test]
    fn nurand_stays_in_range_and_run_constants_keep_their_distance() {
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..10_000 {
            let v = nurand(&mut rng, 1023, 259, 1, 3000);
            assert!((1..=3000).contains(&v));
            let s = nurand(&mut rng, 255, 17, 0, 59);
            assert!(s <= 59);
        }
        for _ in 0..100 {
            let load = NuRandConstants::generate(&mut rng);
            let run = load.for_run(&mut rng);
            let d = run.c_last.abs_diff(load.c_last);
            assert!((65..=119).contains(&d) && d != 96 && d != 112);
        }
    }

    #[test]
    fn data_strings_mark_original() {
        let mut rng = SmallRng::seed_from_u64(2);
        let mut originals = 0;
        for _ in 0..2000 {
            let (t, o): (Text<50>, bool) = data_string(&mut rng, 26, 50);
            assert!((26..=50).contains(&t.len()));
            assert_eq!(o, t.contains(b"ORIGINAL"));
            originals += o as u32;
        }
        assert!((120..=280).contains(&originals), "{originals}");
    }
}

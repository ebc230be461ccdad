//! A SHA-256 digest as markbench keeps it: 64 lowercase hex digits, checked
//! when it is made or read, so its short form is never cut from a string
//! that may be shorter (a record damaged or written by hand).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A SHA-256 digest in hex.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256(String);

/// A string that is no SHA-256 in hex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is no SHA-256 (64 hex digits)")]
pub struct NotASha256(pub String);

impl Sha256 {
    /// The hex digits of the short form: enough to tell entries apart by eye.
    pub const SHORT: usize = 16;

    /// `hex` as a digest, when it is 64 hex digits (either case; kept in
    /// lowercase).
    pub fn parse(hex: impl Into<String>) -> Result<Sha256, NotASha256> {
        let hex = hex.into();
        if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Sha256(hex.to_ascii_lowercase()))
        } else {
            Err(NotASha256(hex))
        }
    }

    /// The digest a hasher gave (32 bytes).
    pub fn from_digest(digest: &[u8]) -> Sha256 {
        debug_assert_eq!(digest.len(), 32, "a SHA-256 digest is 32 bytes");
        Sha256(hex::encode(digest))
    }

    /// The SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256 {
        use sha2::Digest;
        Sha256::from_digest(&sha2::Sha256::digest(bytes))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first [`Sha256::SHORT`] hex digits, as listings and messages
    /// show a digest.
    pub fn short(&self) -> &str {
        short(&self.0)
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Sha256 {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Sha256 {
    type Error = NotASha256;

    fn try_from(hex: String) -> Result<Sha256, NotASha256> {
        Sha256::parse(hex)
    }
}

impl std::str::FromStr for Sha256 {
    type Err = NotASha256;

    fn from_str(hex: &str) -> Result<Sha256, NotASha256> {
        Sha256::parse(hex)
    }
}

impl From<Sha256> for String {
    fn from(digest: Sha256) -> String {
        digest.0
    }
}

impl PartialEq<str> for Sha256 {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<String> for Sha256 {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

/// The first [`Sha256::SHORT`] characters of a hash as a record holds it
/// (all of it when shorter): the one place a hash is shortened for a
/// person.
pub fn short(hash: &str) -> &str {
    match hash.char_indices().nth(Sha256::SHORT) {
        Some((end, _)) => &hash[..end],
        None => hash,
    }
}

/// A hash as a record keeps it: written and read as the same string, so
/// records keep their bytes, and, unlike [`Sha256`], read as it was written
/// (empty when a run did not record it, cut or foreign in a record written
/// by hand), so an old or odd record still reads; shown short by
/// [`Digest::short`].
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Digest(String);

impl Digest {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The hash's bytes as text, for a key made of it.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Nothing recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As listings and messages show it ([`short`]).
    pub fn short(&self) -> &str {
        short(&self.0)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Digest {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Digest {
    fn from(hash: String) -> Digest {
        Digest(hash)
    }
}

impl From<Digest> for String {
    fn from(digest: Digest) -> String {
        digest.0
    }
}

impl From<&str> for Digest {
    fn from(hash: &str) -> Digest {
        Digest(hash.to_string())
    }
}

impl From<Sha256> for Digest {
    fn from(digest: Sha256) -> Digest {
        Digest(digest.0)
    }
}

impl From<&Sha256> for Digest {
    fn from(digest: &Sha256) -> Digest {
        Digest(digest.0.clone())
    }
}

impl PartialEq<str> for Digest {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Digest {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for Digest {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

impl PartialEq<Digest> for String {
    fn eq(&self, other: &Digest) -> bool {
        *self == other.0
    }
}

impl PartialEq<Sha256> for Digest {
    fn eq(&self, other: &Sha256) -> bool {
        self.0 == other.0
    }
}

impl PartialEq<Digest> for Sha256 {
    fn eq(&self, other: &Digest) -> bool {
        self.0 == other.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_64_hex_digits_and_its_short_form_16() {
        let empty = Sha256::of(b"");
        assert_eq!(
            empty.as_str(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(empty.short(), "e3b0c44298fc1c14");
        assert_eq!(Sha256::parse(empty.as_str().to_uppercase()), Ok(empty));
    }

    #[test]
    fn a_short_or_foreign_string_is_refused_not_cut() {
        for bad in [
            "",
            "abc",
            "e3b0c44298fc1c14",
            &"g".repeat(64),
            &"a".repeat(65),
        ] {
            let err = Sha256::parse(bad).unwrap_err();
            assert_eq!(err.0, bad);
            assert!(err.to_string().contains("64 hex digits"), "{err}");
        }
        let read: Result<Sha256, _> = toml::from_str::<toml::Value>("x = \"abc\"")
            .unwrap()
            .get("x")
            .unwrap()
            .clone()
            .try_into();
        assert!(read.is_err());
    }

    #[test]
    fn a_recorded_hash_reads_as_written_and_shows_short() {
        let full = Digest::from(Sha256::of(b""));
        assert_eq!(full.short(), "e3b0c44298fc1c14");
        assert_eq!(Digest::from("abc").short(), "abc");
        assert_eq!(Digest::default().short(), "");
        // Cut at a character, never inside one.
        assert_eq!(short(&"é".repeat(20)), "é".repeat(16));
        let toml =
            toml::to_string(&std::collections::BTreeMap::from([("x", full.clone())])).unwrap();
        assert_eq!(toml, format!("x = \"{full}\"\n"));
    }
}

//! The two keys of envelope encryption and what each does: the master key wraps data keys, a
//! data key seals content. AES-256-GCM for both, a fresh random 96-bit nonce every time, and
//! associated data that binds each ciphertext to where it belongs (a wrapped key to its user,
//! sealed content to its event), so nothing can be moved elsewhere and still open.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};

/// Bytes of a nonce, written before every ciphertext.
const NONCE: usize = 12;

/// Bytes of a key.
const KEY: usize = 32;

/// The master key (`RELATIONS_MASTER_KEY`): wraps every user's data key. Never printed: its
/// `Debug` is redacted and no error names its value.
#[derive(Clone)]
pub struct MasterKey(Aes256Gcm);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

/// A master key that is not 64 hex digits. Says what is wrong, never what was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the master key must be 64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`; \
     got {length} characters{}", if *.hex { "" } else { ", not all hex digits" }
)]
pub struct BadMasterKey {
    /// How many characters were given.
    pub length: usize,
    /// Whether they were all hex digits.
    pub hex: bool,
}

impl std::str::FromStr for MasterKey {
    type Err = BadMasterKey;

    /// 64 hex digits (surrounding white space ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let bad = BadMasterKey {
            length: s.chars().count(),
            hex: s.chars().all(|c| c.is_ascii_hexdigit()),
        };
        if s.len() != 2 * KEY || !bad.hex {
            return Err(bad);
        }
        let mut bytes = [0u8; KEY];
        hex::decode_to_slice(s, &mut bytes).map_err(|_| bad)?;
        let key = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&bytes));
        bytes.fill(0);
        Ok(Self(key))
    }
}

/// A ciphertext that does not open: the wrong key, the wrong place, or altered bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("ciphertext does not open (wrong key, wrong place, or altered)")]
pub struct Unopenable;

impl MasterKey {
    /// `nonce || AES-256-GCM(master, data key)` with `user` as associated data: the row
    /// `data_keys.wrapped` holds.
    pub fn wrap(&self, user: i64, key: &DataKey) -> Vec<u8> {
        seal_with(&self.0, &wrap_context(user), &key.bytes)
    }

    /// The data key `wrapped` holds for `user`.
    pub fn unwrap_key(&self, user: i64, wrapped: &[u8]) -> Result<DataKey, Unopenable> {
        let mut bytes = open_with(&self.0, &wrap_context(user), wrapped)?;
        let key = <[u8; KEY]>::try_from(bytes.as_slice()).map_err(|_| Unopenable);
        bytes.fill(0);
        key.map(DataKey::from_bytes)
    }
}

/// What a wrapped key is bound to: its user.
fn wrap_context(user: i64) -> Vec<u8> {
    format!("relations.data_key/{user}").into_bytes()
}

/// One user's data key: seals and opens that user's content.
#[derive(Clone)]
pub struct DataKey {
    bytes: [u8; KEY],
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(<redacted>)")
    }
}

impl Drop for DataKey {
    fn drop(&mut self) {
        self.bytes.fill(0);
    }
}

impl DataKey {
    /// A fresh random key (the operating system's generator).
    pub fn generate() -> Self {
        let key = Aes256Gcm::generate_key(OsRng);
        Self::from_bytes(key.into())
    }

    fn from_bytes(bytes: [u8; KEY]) -> Self {
        Self {
            cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&bytes)),
            bytes,
        }
    }

    /// `nonce || AES-256-GCM(key, plaintext)`, bound to `context` (associated data).
    pub fn seal(&self, context: &[u8], plaintext: &str) -> Vec<u8> {
        seal_with(&self.cipher, context, plaintext.as_bytes())
    }

    /// The text [`DataKey::seal`] sealed under the same `context`.
    pub fn open(&self, context: &[u8], sealed: &[u8]) -> Result<String, Unopenable> {
        String::from_utf8(open_with(&self.cipher, context, sealed)?).map_err(|_| Unopenable)
    }
}

fn seal_with(cipher: &Aes256Gcm, context: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let nonce = Aes256Gcm::generate_nonce(OsRng);
    let payload = Payload {
        msg: plaintext,
        aad: context,
    };
    // Encryption fails only beyond GCM's length limit (64 GiB), far past any content.
    let ciphertext = cipher
        .encrypt(&nonce, payload)
        .expect("AES-GCM seals any text below 64 GiB");
    let mut out = Vec::with_capacity(NONCE + ciphertext.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ciphertext);
    out
}

fn open_with(cipher: &Aes256Gcm, context: &[u8], sealed: &[u8]) -> Result<Vec<u8>, Unopenable> {
    if sealed.len() < NONCE {
        return Err(Unopenable);
    }
    let (nonce, ciphertext) = sealed.split_at(NONCE);
    let payload = Payload {
        msg: ciphertext,
        aad: context,
    };
    cipher
        .decrypt(Nonce::from_slice(nonce), payload)
        .map_err(|_| Unopenable)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MASTER: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    fn master() -> MasterKey {
        MASTER.parse().unwrap()
    }

    #[test]
    fn a_master_key_is_64_hex_digits_and_never_shown() {
        assert!(master().wrap(1, &DataKey::generate()).len() == NONCE + KEY + 16);
        let short = "abc".parse::<MasterKey>().unwrap_err();
        assert_eq!(
            short,
            BadMasterKey {
                length: 3,
                hex: true
            }
        );
        let not_hex = MASTER.replace('0', "g").parse::<MasterKey>().unwrap_err();
        assert!(!not_hex.hex);
        assert!(!not_hex.to_string().contains("ggg"), "{not_hex}");
        assert_eq!(format!("{:?}", master()), "MasterKey(<redacted>)");
        assert_eq!(format!("{:?}", DataKey::generate()), "DataKey(<redacted>)");
        assert!(format!(" {MASTER} \n").parse::<MasterKey>().is_ok());
    }

    #[test]
    fn a_wrapped_key_unwraps_only_with_its_master_key_and_for_its_user() {
        let key = DataKey::generate();
        let wrapped = master().wrap(7, &key);
        let unwrapped = master().unwrap_key(7, &wrapped).unwrap();
        assert_eq!(unwrapped.bytes, key.bytes);
        let other: MasterKey = MASTER.replace("1f", "ff").parse().unwrap();
        assert_eq!(other.unwrap_key(7, &wrapped).unwrap_err(), Unopenable);
        assert_eq!(master().unwrap_key(8, &wrapped).unwrap_err(), Unopenable);
        assert_eq!(
            master().unwrap_key(7, &wrapped[..20]).unwrap_err(),
            Unopenable
        );
    }

    #[test]
    fn sealed_content_opens_with_its_key_in_its_place_only() {
        let key = DataKey::generate();
        let sealed = key.seal(b"post/p/1/7", "hello, world");
        assert!(!String::from_utf8_lossy(&sealed).contains("hello"));
        assert_eq!(key.open(b"post/p/1/7", &sealed).unwrap(), "hello, world");
        // Another key, another place, altered bytes: nothing opens.
        assert!(DataKey::generate().open(b"post/p/1/7", &sealed).is_err());
        assert!(key.open(b"post/q/1/7", &sealed).is_err());
        for at in [0, NONCE, sealed.len() - 1] {
            let mut tampered = sealed.clone();
            tampered[at] ^= 1;
            assert!(key.open(b"post/p/1/7", &tampered).is_err(), "byte {at}");
        }
        assert!(key.open(b"post/p/1/7", &[]).is_err());
    }

    #[test]
    fn every_seal_takes_a_fresh_nonce() {
        let key = DataKey::generate();
        let a = key.seal(b"c", "same text");
        let b = key.seal(b"c", "same text");
        assert_ne!(a[..NONCE], b[..NONCE]);
        assert_ne!(a, b);
        let wrapped = (master().wrap(1, &key), master().wrap(1, &key));
        assert_ne!(wrapped.0, wrapped.1);
    }
}

//! HS256 tokens: the claims this service reads and writes, the keys derived once from
//! `RELATIONS_JWT_SECRET`, and the [`Actor`] a verified token names. What a request does with
//! them (revocations, bans, erasure, the extractors) is [`crate::auth`].

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use relations_domain::{TokenStamp, UserId};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// The claims this service reads and writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    /// The user id, as a decimal string.
    pub sub: String,
    /// Expiry, seconds since the epoch.
    pub exp: u64,
    /// Issued at, seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    /// Roles; `"admin"` grants the admin endpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// The client or device (missing: `""`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli: Option<String>,
    /// The token's version for its client (missing: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ver: Option<i64>,
    /// The user's batch the token belongs to (missing: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bat: Option<i64>,
}

/// The keys derived once from `RELATIONS_JWT_SECRET`.
#[derive(Clone)]
pub struct JwtKeys(Arc<Keys>);

/// Shared, so that cloning the state for each request copies a pointer, not the keys.
struct Keys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl JwtKeys {
    /// Keys for an HS256 secret.
    pub fn new(secret: &str) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 5;
        validation.set_required_spec_claims(&["exp", "sub"]);
        Self(Arc::new(Keys {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
        }))
    }

    /// A token for `user`, valid for `ttl`.
    pub fn issue(&self, user: UserId, admin: bool, ttl: Duration) -> anyhow::Result<String> {
        self.issue_stamped(user, admin, ttl, None)
    }

    /// A token for `user`, valid for `ttl`, with a client, version and batch when given.
    pub fn issue_stamped(
        &self,
        user: UserId,
        admin: bool,
        ttl: Duration,
        stamp: Option<&TokenStamp>,
    ) -> anyhow::Result<String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let claims = Claims {
            sub: user.to_string(),
            exp: now + ttl.as_secs(),
            iat: Some(now),
            roles: if admin { vec!["admin".into()] } else { vec![] },
            cli: stamp.map(|s| s.client.clone()),
            ver: stamp.map(|s| s.ver),
            bat: stamp.map(|s| s.bat),
        };
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.0.encoding,
        )?)
    }

    /// The actor a bearer token names, or why it names none.
    pub fn verify(&self, token: &str) -> Result<Actor, ApiError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.0.decoding, &self.0.validation)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => {
                    ApiError::Unauthenticated("the token has expired")
                }
                jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                    ApiError::Unauthenticated("the token's signature is invalid")
                }
                _ => ApiError::Unauthenticated("the token is malformed"),
            })?;
        let user = data
            .claims
            .sub
            .parse()
            .map_err(|_| ApiError::Unauthenticated("the token's sub is not a user id"))?;
        let claims = data.claims;
        Ok(Actor {
            user,
            admin: claims.roles.iter().any(|r| r == "admin"),
            stamp: TokenStamp {
                client: claims.cli.unwrap_or_default(),
                ver: claims.ver.unwrap_or(0),
                bat: claims.bat.unwrap_or(0),
            },
        })
    }
}

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Actor {
    /// The token's `sub`.
    pub user: UserId,
    /// Whether the token carries the `admin` role.
    pub admin: bool,
    /// The token's client, version and batch (what revocations compare).
    pub stamp: TokenStamp,
}

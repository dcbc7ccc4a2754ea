//! Where data sources' tables are kept: in the database (the default, with
//! no store URL), or as objects in an S3-compatible store.

use std::time::Duration;

use anyhow::ensure;
use secrecy::{ExposeSecret as _, SecretString};
use url::Url;

use crate::outbound::datasource::{MIN_PART_BYTES, ObjectSettings, StoreAccess};

/// Bytes of one part of an upload, by default.
pub const DEFAULT_PART_BYTES: usize = 8 * 1024 * 1024;

/// Parts of one upload in flight, by default.
pub const DEFAULT_CONCURRENT_PARTS: usize = 4;

/// The store of data sources' tables.
///
/// Memory: each import uploading holds at most `concurrent_parts ×
/// part_bytes` of buffers in flight beside its table.
#[derive(Debug, Clone, clap::Args)]
pub struct ObjectStoreArgs {
    /// `s3://bucket` or `s3://bucket/prefix`: keeps each new table as an
    /// object there and only its metadata in the database. Unset, tables
    /// are kept in the database.
    #[arg(
        long = "data-source-store-url",
        env = "SWITCHBOARD_DATA_SOURCE_STORE_URL"
    )]
    pub url: Option<Url>,
    /// The store's endpoint (an S3-compatible server other than AWS);
    /// by default `AWS_ENDPOINT`, or AWS's.
    #[arg(
        long = "data-source-store-endpoint",
        env = "SWITCHBOARD_DATA_SOURCE_STORE_ENDPOINT"
    )]
    pub endpoint: Option<String>,
    /// The store's region; by default `AWS_REGION`, or `us-east-1`.
    #[arg(
        long = "data-source-store-region",
        env = "SWITCHBOARD_DATA_SOURCE_STORE_REGION"
    )]
    pub region: Option<String>,
    /// Access key id; by default `AWS_ACCESS_KEY_ID`, or the instance's
    /// credentials.
    #[arg(
        long = "data-source-store-access-key-id",
        env = "SWITCHBOARD_DATA_SOURCE_STORE_ACCESS_KEY_ID"
    )]
    pub access_key_id: Option<String>,
    /// Secret access key; by default `AWS_SECRET_ACCESS_KEY`.
    #[arg(
        long = "data-source-store-secret-access-key",
        env = "SWITCHBOARD_DATA_SOURCE_STORE_SECRET_ACCESS_KEY",
        hide_env_values = true
    )]
    pub secret_access_key: Option<SecretString>,
    /// Whether plain HTTP is allowed (a store on loopback); by default
    /// `AWS_ALLOW_HTTP`, or not.
    #[arg(long = "data-source-store-allow-http", env = "SWITCHBOARD_DATA_SOURCE_STORE_ALLOW_HTTP", action = clap::ArgAction::Set)]
    pub allow_http: Option<bool>,
    /// Bytes of one part of an upload (at least 5 MiB, S3's smallest).
    #[arg(long = "data-source-store-part-bytes", env = "SWITCHBOARD_DATA_SOURCE_STORE_PART_BYTES", default_value_t = DEFAULT_PART_BYTES)]
    pub part_bytes: usize,
    /// Parts of one upload in flight at once.
    #[arg(long = "data-source-store-concurrent-parts", env = "SWITCHBOARD_DATA_SOURCE_STORE_CONCURRENT_PARTS", default_value_t = DEFAULT_CONCURRENT_PARTS)]
    pub concurrent_parts: usize,
    /// How often the objects a failed thread deletion left are swept.
    #[arg(long = "data-source-store-sweep-interval", env = "SWITCHBOARD_DATA_SOURCE_STORE_SWEEP_INTERVAL", default_value = "5m", value_parser = humantime::parse_duration)]
    pub sweep_interval: Duration,
}

impl Default for ObjectStoreArgs {
    fn default() -> Self {
        Self {
            url: None,
            endpoint: None,
            region: None,
            access_key_id: None,
            secret_access_key: None,
            allow_http: None,
            part_bytes: DEFAULT_PART_BYTES,
            concurrent_parts: DEFAULT_CONCURRENT_PARTS,
            sweep_interval: Duration::from_secs(300),
        }
    }
}

impl ObjectStoreArgs {
    /// The store's settings, if one is set: the explicit settings over the
    /// standard AWS environment variables.
    pub fn settings(&self) -> anyhow::Result<Option<ObjectSettings>> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        ensure!(
            url.scheme() == "s3" && url.host_str().is_some_and(|host| !host.is_empty()),
            "SWITCHBOARD_DATA_SOURCE_STORE_URL ({url}) must be s3://bucket or s3://bucket/prefix"
        );
        ensure!(
            self.part_bytes >= MIN_PART_BYTES,
            "SWITCHBOARD_DATA_SOURCE_STORE_PART_BYTES ({}) must be at least {MIN_PART_BYTES}, \
             the smallest part S3 accepts",
            self.part_bytes
        );
        ensure!(
            (1..=64).contains(&self.concurrent_parts),
            "SWITCHBOARD_DATA_SOURCE_STORE_CONCURRENT_PARTS ({}) must be between 1 and 64",
            self.concurrent_parts
        );
        let bucket = url.host_str().unwrap_or_default();
        let mut access = StoreAccess::from_env(bucket);
        if let Some(endpoint) = &self.endpoint {
            access.endpoint = Some(endpoint.clone());
        }
        if let Some(region) = &self.region {
            access.region = Some(region.clone());
        }
        if let Some(key) = &self.access_key_id {
            access.access_key_id = Some(key.clone());
        }
        if let Some(secret) = &self.secret_access_key {
            access.secret_access_key = Some(secret.expose_secret().to_owned());
        }
        if let Some(allow_http) = self.allow_http {
            access.allow_http = allow_http;
        }
        Ok(Some(ObjectSettings {
            url: url.clone(),
            access,
            part_bytes: self.part_bytes,
            concurrent_parts: self.concurrent_parts,
        }))
    }
}

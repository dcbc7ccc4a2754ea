//! Tables as objects in an S3-compatible store.
//!
//! With a store set, an imported table's Parquet goes to the object
//! `{prefix}/threads/{thread id}/{data source id}.parquet` and its row keeps
//! the metadata, the key and the size. Keys are built from the ids the
//! service generated and nothing else: never from a CSV's name, a table
//! name or an organization id (which comes from a token).
//!
//! An upload is a multipart upload of [`ObjectSettings::part_bytes`] parts,
//! at most [`ObjectSettings::concurrent_parts`] in flight. A query's worker
//! reads the object through DataFusion's Parquet scan, row group by row
//! group, with the credentials the operator configured, which the service
//! hands it over its stdin (the worker's environment is empty).
//!
//! Deletion: a thread's objects go after its rows. A record of the thread's
//! prefix is written to `data_source_object_sweeps` before its rows are
//! deleted and removed once its objects are; a deletion that failed or was
//! cut by a crash leaves the record, and the sweep ([`TableObjects::sweep`],
//! run on an interval) deletes what is still there once the thread's row is
//! gone. The record is written first because a failure between the two
//! deletions must never leave objects that no row or record points at: an
//! object without a record would be kept (and paid for) forever, unseen.

use std::{fmt, sync::Arc};

use anyhow::Context as _;
use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use object_store::{
    ObjectStore, ObjectStoreExt as _, WriteMultipart,
    aws::{AmazonS3Builder, AmazonS3ConfigKey},
    path::Path,
};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::domain::ids::{DataSourceId, ThreadId};

/// The smallest part S3 accepts (but the last).
pub const MIN_PART_BYTES: usize = 5 * 1024 * 1024;

/// How the service reaches the store and how it uploads.
#[derive(Clone)]
pub struct ObjectSettings {
    /// `s3://bucket` or `s3://bucket/prefix`.
    pub url: Url,
    pub access: StoreAccess,
    /// Bytes of one part of an upload.
    pub part_bytes: usize,
    /// Parts of one upload in flight at once.
    pub concurrent_parts: usize,
}

impl fmt::Debug for ObjectSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectSettings")
            .field("url", &self.url.as_str())
            .field("access", &self.access)
            .field("part_bytes", &self.part_bytes)
            .field("concurrent_parts", &self.concurrent_parts)
            .finish()
    }
}

/// What a process needs to open the store: the operator's settings, or
/// the standard AWS environment variables the service read, resolved once
/// in the service. A query's worker receives it on its stdin.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct StoreAccess {
    pub bucket: String,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    /// Whether plain HTTP is allowed (a store on loopback).
    pub allow_http: bool,
}

impl fmt::Debug for StoreAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secret and token are never printed.
        f.debug_struct("StoreAccess")
            .field("bucket", &self.bucket)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("allow_http", &self.allow_http)
            .finish_non_exhaustive()
    }
}

impl StoreAccess {
    /// The access the standard AWS environment variables (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` or
    /// `AWS_DEFAULT_REGION`, `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`) give for
    /// `bucket`; the explicit settings then override it. Web-identity and
    /// container credentials are not among them: a query's worker, whose
    /// environment is empty, could not renew them.
    pub fn from_env(bucket: &str) -> Self {
        let env = AmazonS3Builder::from_env();
        let value = |key| {
            env.get_config_value(&key)
                .filter(|v: &String| !v.is_empty())
        };
        Self {
            bucket: bucket.to_owned(),
            endpoint: value(AmazonS3ConfigKey::Endpoint),
            region: value(AmazonS3ConfigKey::Region)
                .or_else(|| value(AmazonS3ConfigKey::DefaultRegion)),
            access_key_id: value(AmazonS3ConfigKey::AccessKeyId),
            secret_access_key: value(AmazonS3ConfigKey::SecretAccessKey),
            session_token: value(AmazonS3ConfigKey::Token),
            allow_http: value(AmazonS3ConfigKey::Client(
                object_store::ClientConfigKey::AllowHttp,
            ))
            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        }
    }

    /// A client of the store. Without keys, the client finds credentials
    /// as the AWS SDKs do on an instance (its metadata service).
    pub fn open(&self) -> anyhow::Result<Arc<dyn ObjectStore>> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&self.bucket)
            .with_allow_http(self.allow_http);
        if let Some(endpoint) = &self.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        if let Some(region) = &self.region {
            builder = builder.with_region(region);
        }
        if let Some(key) = &self.access_key_id {
            builder = builder.with_access_key_id(key);
        }
        if let Some(secret) = &self.secret_access_key {
            builder = builder.with_secret_access_key(secret);
        }
        if let Some(token) = &self.session_token {
            builder = builder.with_token(token);
        }
        Ok(Arc::new(
            builder
                .build()
                .context("invalid data source object store settings")?,
        ))
    }
}

/// An object being uploaded in parts of [`ObjectSettings::part_bytes`], at
/// most [`ObjectSettings::concurrent_parts`] in flight. Dropped unfinished,
/// its parts in flight stop; [`Upload::abort`] also removes those the store
/// already has.
pub(super) struct Upload {
    writer: WriteMultipart,
    concurrent_parts: usize,
    bytes: u64,
}

impl fmt::Debug for Upload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upload")
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl Upload {
    /// Hands on the object's next bytes: each full part is uploaded, while
    /// the caller goes on, once fewer than the parts allowed are in flight.
    /// The parts are slices of `bytes` (no copy).
    pub(super) async fn put(&mut self, bytes: Bytes) -> anyhow::Result<()> {
        self.bytes += bytes.len() as u64;
        self.writer.put(bytes);
        self.writer
            .wait_for_capacity(self.concurrent_parts)
            .await
            .context("failed to upload a table")
    }

    /// Uploads what is left and completes the object; its size.
    pub(super) async fn finish(self) -> anyhow::Result<u64> {
        // `finish` aborts the upload itself if completing it fails.
        self.writer
            .finish()
            .await
            .context("failed to finish uploading a table")?;
        Ok(self.bytes)
    }

    /// Stops the upload and removes the parts the store has.
    pub(super) async fn abort(self) {
        if let Err(error) = self.writer.abort().await {
            tracing::warn!(error = %error, "failed to abort a table's upload");
        }
    }
}

/// The store of a service's tables.
#[derive(Debug)]
pub struct TableObjects {
    store: Arc<dyn ObjectStore>,
    access: StoreAccess,
    /// The key prefix of every table (the URL's path), without slashes at
    /// its ends; may be empty.
    prefix: String,
    part_bytes: usize,
    concurrent_parts: usize,
}

impl TableObjects {
    /// The store `settings` name.
    pub fn new(settings: &ObjectSettings) -> anyhow::Result<Self> {
        anyhow::ensure!(
            settings.url.scheme() == "s3",
            "the data source store URL must be s3://bucket[/prefix], not {}",
            settings.url
        );
        Ok(Self {
            store: settings.access.open()?,
            access: settings.access.clone(),
            prefix: settings.url.path().trim_matches('/').to_owned(),
            part_bytes: settings.part_bytes.max(MIN_PART_BYTES),
            concurrent_parts: settings.concurrent_parts.max(1),
        })
    }

    /// The client of the store.
    pub(super) fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.store)
    }

    /// What a query's worker needs to read the tables.
    pub(super) fn access(&self) -> &StoreAccess {
        &self.access
    }

    /// The prefix of all of `thread`'s objects, ending in a slash.
    pub(super) fn thread_prefix(&self, thread: ThreadId) -> String {
        if self.prefix.is_empty() {
            format!("threads/{thread}/")
        } else {
            format!("{}/threads/{thread}/", self.prefix)
        }
    }

    /// The key of data source `id` of `thread`.
    pub(super) fn key(&self, thread: ThreadId, id: DataSourceId) -> String {
        format!("{}{id}.parquet", self.thread_prefix(thread))
    }

    /// Starts uploading the object `key` in parts.
    pub(super) async fn start_upload(&self, key: &str) -> anyhow::Result<Upload> {
        let upload = self
            .store
            .put_multipart(&Path::from(key))
            .await
            .context("failed to start uploading a table")?;
        Ok(Upload {
            writer: WriteMultipart::new_with_chunk_size(upload, self.part_bytes),
            concurrent_parts: self.concurrent_parts,
            bytes: 0,
        })
    }

    /// Bytes of one part of an upload.
    pub(super) fn part_bytes(&self) -> usize {
        self.part_bytes
    }

    /// Deletes the object `key`; one that is already gone is no error.
    pub(super) async fn delete(&self, key: &str) -> anyhow::Result<()> {
        match self.store.delete(&Path::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(anyhow::Error::new(error).context("failed to delete a table")),
        }
    }

    /// Deletes every object under `prefix`; how many there were.
    pub(super) async fn delete_prefix(&self, prefix: &str) -> anyhow::Result<usize> {
        let prefix = Path::from(prefix);
        let locations = self
            .store
            .list(Some(&prefix))
            .map_ok(|meta| meta.location)
            .boxed();
        let deleted: Vec<Path> = self
            .store
            .delete_stream(locations)
            .try_collect()
            .await
            .context("failed to delete a thread's tables")?;
        Ok(deleted.len())
    }
}

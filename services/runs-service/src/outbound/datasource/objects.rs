//! Tables as objects in an S3-compatible store.
//!
//! With a store set, an imported table's Parquet goes to the object
//! `{prefix}/threads/{thread id}/{data source id}.parquet` and its row keeps
//! the metadata, the key and the size. Keys are built from the ids the
//! service generated and nothing else: never from a CSV's name, a table
//! name or an organization id (which comes from a token).
//!
//! An upload is a multipart upload of [`ObjectSettings::part_bytes`] parts,
//! at most [`ObjectSettings::concurrent_parts`] in flight. An import hands
//! its Parquet on as it encodes it, a row group at a time
//! (`import_work.rs`), so the upload runs while the import works and the
//! import never holds the whole table; one given up part-way is aborted, so
//! that the store keeps none of its parts. A query's worker
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
    aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey},
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
    /// Where renewing credentials come from, as the AWS environment names
    /// it: a web identity (`AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`,
    /// …) or a container's credentials endpoint
    /// (`AWS_CONTAINER_CREDENTIALS_FULL_URI`, …). The service renews them and
    /// hands a query's worker the current credentials; this itself never
    /// goes to the worker.
    #[serde(skip)]
    pub renewing: Vec<(AmazonS3ConfigKey, String)>,
}

/// The settings of renewing credentials the service reads from the AWS
/// environment.
const RENEWING: [AmazonS3ConfigKey; 7] = [
    AmazonS3ConfigKey::WebIdentityTokenFile,
    AmazonS3ConfigKey::RoleArn,
    AmazonS3ConfigKey::RoleSessionName,
    AmazonS3ConfigKey::StsEndpoint,
    AmazonS3ConfigKey::ContainerCredentialsRelativeUri,
    AmazonS3ConfigKey::ContainerCredentialsFullUri,
    AmazonS3ConfigKey::ContainerAuthorizationTokenFile,
];

impl fmt::Debug for StoreAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secret and token are never printed.
        f.debug_struct("StoreAccess")
            .field("bucket", &self.bucket)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("allow_http", &self.allow_http)
            .field(
                "renewing",
                &self.renewing.iter().map(|(key, _)| key).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl StoreAccess {
    /// The access the standard AWS environment variables (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` or
    /// `AWS_DEFAULT_REGION`, `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`) give for
    /// `bucket`, with the settings of renewing credentials (web identity,
    /// a container's credentials endpoint); the explicit settings then
    /// override it.
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
            renewing: RENEWING
                .into_iter()
                .filter_map(|key| Some((key, value(key)?)))
                .collect(),
        }
    }

    /// A client of the store. Without keys, the client renews credentials
    /// from [`Self::renewing`], or finds them as the AWS SDKs do on an
    /// instance (its metadata service).
    pub fn open(&self) -> anyhow::Result<Arc<dyn ObjectStore>> {
        Ok(Arc::new(self.open_s3()?))
    }

    fn open_s3(&self) -> anyhow::Result<AmazonS3> {
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
        for (key, value) in &self.renewing {
            builder = builder.with_config(*key, value);
        }
        builder
            .build()
            .context("invalid data source object store settings")
    }
}

/// An object being uploaded in parts of [`ObjectSettings::part_bytes`], at
/// most [`ObjectSettings::concurrent_parts`] in flight. Dropped unfinished
/// (its import's caller stopped waiting, or it was never taken from where
/// it was handed), it aborts itself in the background, so that the store
/// keeps none of its parts.
pub(super) struct Upload {
    /// `None` once finished or aborted.
    writer: Option<WriteMultipart>,
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
        let writer = self.writer.as_mut().context("the upload is over")?;
        self.bytes += bytes.len() as u64;
        writer.put(bytes);
        writer
            .wait_for_capacity(self.concurrent_parts)
            .await
            .context("failed to upload a table")
    }

    /// Uploads what is left and completes the object; its size.
    pub(super) async fn finish(mut self) -> anyhow::Result<u64> {
        let writer = self.writer.take().context("the upload is over")?;
        // `finish` aborts the upload itself if completing it fails.
        writer
            .finish()
            .await
            .context("failed to finish uploading a table")?;
        Ok(self.bytes)
    }

    /// Stops the upload and removes the parts the store has.
    pub(super) async fn abort(mut self) {
        if let Some(writer) = self.writer.take() {
            abort(writer).await;
        }
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(abort(writer));
        }
    }
}

/// Aborts an upload. The parts in flight are let finish first: a part the
/// store is still receiving when the upload is aborted would be kept after
/// the abort.
async fn abort(mut writer: WriteMultipart) {
    let _ = writer.wait_for_capacity(0).await;
    if let Err(error) = writer.abort().await {
        tracing::warn!(error = %error, "failed to abort a table's upload");
    }
}

/// The store of a service's tables.
#[derive(Debug)]
pub struct TableObjects {
    store: Arc<AmazonS3>,
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
            store: Arc::new(settings.access.open_s3()?),
            access: settings.access.clone(),
            prefix: settings.url.path().trim_matches('/').to_owned(),
            part_bytes: settings.part_bytes.max(MIN_PART_BYTES),
            concurrent_parts: settings.concurrent_parts.max(1),
        })
    }

    /// The client of the store.
    pub(super) fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::<AmazonS3>::clone(&self.store)
    }

    /// What a query's worker needs to read the tables: the operator's
    /// settings, with the current renewing credentials in place of where
    /// they come from (the worker could not renew them).
    pub(super) async fn worker_access(&self) -> anyhow::Result<StoreAccess> {
        let mut access = self.access.clone();
        if access.access_key_id.is_none() && !access.renewing.is_empty() {
            let credential = self
                .store
                .credentials()
                .get_credential()
                .await
                .context("failed to renew the data source store's credentials")?;
            access.access_key_id = Some(credential.key_id.clone());
            access.secret_access_key = Some(credential.secret_key.clone());
            access.session_token.clone_from(&credential.token);
        }
        access.renewing.clear();
        Ok(access)
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
            writer: Some(WriteMultipart::new_with_chunk_size(upload, self.part_bytes)),
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

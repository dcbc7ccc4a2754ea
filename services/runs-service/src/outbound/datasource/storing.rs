//! Where an import's table goes as it is encoded (its object in the store,
//! or its row), and the end of an import: the table completed and its row
//! written together, to their end, whether or not the caller still waits.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::{
    SqlDataSources,
    objects::{TableObjects, Upload},
    rows::{Store, Stored},
};
use crate::domain::{
    datasource::{DataSource, ImportError},
    ids::{DataSourceId, ThreadId},
};

/// Where an import's table goes as it is encoded: its object, uploaded
/// part by part as the parts come (the upload starts with the first), or,
/// without a store, the row, whole at the end. Dropped with an upload under
/// way (its caller stopped waiting), the upload aborts itself.
#[derive(Debug)]
pub(super) struct Storing {
    objects: Option<(Arc<TableObjects>, String)>,
    upload: Option<Upload>,
}

impl SqlDataSources {
    /// Where the table of data source `id` of `thread_id` goes as it is
    /// encoded.
    pub(super) fn storing(&self, thread_id: ThreadId, id: DataSourceId) -> Storing {
        Storing {
            objects: self
                .objects
                .as_ref()
                .map(|objects| (Arc::clone(objects), objects.key(thread_id, id))),
            upload: None,
        }
    }
}

impl Storing {
    /// Encoded bytes to hand on as a part once there are as many: a part of
    /// the upload, or none without a store.
    pub(super) fn part_bytes(&self) -> Option<usize> {
        self.objects
            .as_ref()
            .map(|(objects, _)| objects.part_bytes())
    }

    /// Hands on the table's next bytes.
    pub(super) async fn put(&mut self, part: Vec<u8>) -> anyhow::Result<()> {
        let Some((objects, key)) = &self.objects else {
            anyhow::bail!("a part of a table without a store");
        };
        let upload = match &mut self.upload {
            Some(upload) => upload,
            None => self.upload.insert(start(objects, key).await?),
        };
        upload.put(Bytes::from(part)).await
    }

    /// Stores the table, given its last bytes, and writes the row of
    /// `source` for it: the table name it was given, and where its bytes
    /// are. Both run to their end in a task of their own, so that a caller
    /// that stops waiting can never leave an object without its row: once
    /// both are done, an import nobody waits for any more is undone (its row
    /// and its object deleted), and a failed row deletes its object.
    pub(super) async fn finish_and_record(
        self,
        rest: Vec<u8>,
        store: Arc<Store>,
        source: DataSource,
        name: String,
    ) -> Result<(String, Stored), ImportError> {
        let objects = self
            .objects
            .as_ref()
            .map(|(objects, _)| Arc::clone(objects));
        let undo = (Arc::clone(&store), objects.clone(), source.id);
        let recorded = to_its_end(
            async move {
                let stored = self.finish(rest).await.map_err(ImportError::Storage)?;
                match store.insert(&source, &name, &stored).await {
                    Ok(table_name) => Ok((table_name, stored)),
                    Err(error) => {
                        forget_object(objects.as_deref(), &stored).await;
                        Err(ImportError::Storage(error))
                    }
                }
            },
            move |recorded| async move {
                let (store, objects, id) = undo;
                if let Ok((_, stored)) = recorded {
                    match store.delete_row(id).await {
                        Ok(()) => forget_object(objects.as_deref(), &stored).await,
                        Err(error) => tracing::warn!(
                            data_source = %id,
                            error = %format!("{error:#}"),
                            "failed to undo an import whose caller left; the thread's deletion removes it"
                        ),
                    }
                }
            },
        )
        .await;
        recorded.map_err(ImportError::Storage)?
    }

    /// The table stored, given its last bytes: the object completed, or the
    /// bytes for the row.
    async fn finish(mut self, rest: Vec<u8>) -> anyhow::Result<Stored> {
        let Some((_, key)) = self.objects.clone() else {
            return Ok(Stored::Bytes(Bytes::from(rest)));
        };
        if let Err(error) = self.put(rest).await {
            self.abort().await;
            return Err(error);
        }
        let Some(upload) = self.upload.take() else {
            anyhow::bail!("a table's upload was never started");
        };
        let bytes = upload.finish().await?;
        Ok(Stored::Object { key, bytes })
    }

    /// Stops an upload under way, removing its parts.
    pub(super) async fn abort(mut self) {
        if let Some(upload) = self.upload.take() {
            upload.abort().await;
        }
    }
}

/// Deletes the object of a table whose row is not there; one left behind
/// is logged (the thread's deletion or sweep removes it later).
async fn forget_object(objects: Option<&TableObjects>, stored: &Stored) {
    if let (Some(objects), Stored::Object { key, .. }) = (objects, stored)
        && let Err(error) = objects.delete(key).await
    {
        tracing::warn!(key = %key, error = %format!("{error:#}"), "failed to delete an unstored table's object");
    }
}

/// Starts uploading `key` to its end: an upload whose caller is gone is
/// dropped, and aborts itself.
async fn start(objects: &Arc<TableObjects>, key: &str) -> anyhow::Result<Upload> {
    let (objects, key) = (Arc::clone(objects), key.to_owned());
    to_its_end(async move { objects.start_upload(&key).await }, |_| async {
    })
    .await?
}

/// Runs `work` in a task of its own to its end, and its answer; when the
/// caller stops waiting first, `orphaned` gets the answer. A request to the
/// store cut part-way may have taken effect there unseen (an upload
/// created, an object completed), so such requests are never cut. The
/// answer is handed over as an [`Unclaimed`], so one the caller left
/// before taking, even in flight, still reaches `orphaned`.
async fn to_its_end<T, F>(
    work: impl Future<Output = T> + Send + 'static,
    orphaned: impl FnOnce(T) -> F + Send + 'static,
) -> anyhow::Result<T>
where
    T: Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let (done, answer) = oneshot::channel();
    tokio::spawn(async move {
        // Refused, it is dropped here and goes to `orphaned`.
        let _ = done.send(Unclaimed {
            answer: Some((work.await, orphaned)),
        });
    });
    let mut unclaimed = answer
        .await
        .map_err(|_| anyhow::anyhow!("a request to the data source store stopped"))?;
    unclaimed
        .answer
        .take()
        .map(|(answer, _)| answer)
        .ok_or_else(|| anyhow::anyhow!("a request to the data source store answered twice"))
}

/// An answer on its way to its caller, and what to do with it if the
/// caller drops it unclaimed.
struct Unclaimed<T, O, F>
where
    T: Send + 'static,
    O: FnOnce(T) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    answer: Option<(T, O)>,
}

impl<T, O, F> Drop for Unclaimed<T, O, F>
where
    T: Send + 'static,
    O: FnOnce(T) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    fn drop(&mut self) {
        let Some((answer, orphaned)) = self.answer.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(orphaned(answer))),
            Err(_) => tracing::warn!(
                "an answer from the data source store was left with no runtime to undo it"
            ),
        }
    }
}

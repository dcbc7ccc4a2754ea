//! Stored tables kept in memory, least recently used evicted first, so that
//! repeated queries over a thread's tables don't read them from the database
//! again. A table is kept as stored (Parquet bytes, several times smaller
//! than decoded); the query's worker process decodes it.

use std::{collections::HashMap, sync::Mutex};

use bytes::Bytes;

use crate::domain::ids::DataSourceId;

/// Tables by data source id, bounded by the bytes they take. Stored tables
/// never change, so an entry stays valid until evicted.
#[derive(Debug)]
pub(super) struct TableCache {
    capacity: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    tables: HashMap<DataSourceId, (Bytes, u64)>,
    bytes: usize,
    clock: u64,
}

impl TableCache {
    /// A cache holding at most `capacity` bytes of tables.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Entries::default()),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves consistent entries (each
        // update is a single map operation), so a poisoned lock is usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The table `id`, marked as just used.
    pub fn get(&self, id: DataSourceId) -> Option<Bytes> {
        let mut entries = self.entries();
        entries.clock += 1;
        let now = entries.clock;
        entries.tables.get_mut(&id).map(|(table, used)| {
            *used = now;
            table.clone()
        })
    }

    /// Keeps `table` as `id`, evicting the least recently used tables to
    /// stay within capacity. A table larger than the whole cache isn't kept.
    pub fn insert(&self, id: DataSourceId, table: Bytes) {
        if table.len() > self.capacity {
            return;
        }
        let mut entries = self.entries();
        entries.clock += 1;
        let now = entries.clock;
        let bytes = table.len();
        if let Some((old, _)) = entries.tables.insert(id, (table, now)) {
            entries.bytes -= old.len();
        }
        entries.bytes += bytes;
        while entries.bytes > self.capacity {
            let Some(oldest) = entries
                .tables
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(id, _)| *id)
            else {
                break;
            };
            if let Some((evicted, _)) = entries.tables.remove(&oldest) {
                entries.bytes -= evicted.len();
            }
        }
    }

    /// The bytes held now.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.entries().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(bytes: usize) -> Bytes {
        Bytes::from(vec![0; bytes])
    }

    #[test]
    fn the_least_recently_used_tables_go_first() {
        let [a, b, c, huge] = [1, 2, 3, 4].map(DataSourceId::fixed);
        let cache = TableCache::new(100);
        cache.insert(a, table(40));
        cache.insert(b, table(40));
        assert!(cache.get(a).is_some());
        cache.insert(c, table(40));
        assert!(cache.get(b).is_none(), "b was the least recently used");
        assert!(cache.get(a).is_some() && cache.get(c).is_some());
        assert_eq!(cache.bytes(), 80);
        cache.insert(huge, table(101));
        assert!(cache.get(huge).is_none());
        assert_eq!(cache.bytes(), 80);
    }
}

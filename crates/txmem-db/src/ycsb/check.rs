//! The consistency check after a run, and a hook that breaks what it
//! checks.

use std::sync::atomic::Ordering;

use txmem::atomically;

use super::record::Stamp;
use super::Ycsb;

impl Ycsb {
    /// See [`Ycsb::check`](crate::Workload::check) and the module docs.
    pub(super) fn check_all(&self) -> Result<(), String> {
        if let Some(p) = self
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Err(p);
        }
        let per_worker = self.workers.committed();
        let updates: u64 = per_worker.iter().map(|c| c.updates).sum();
        let rmws: u64 = per_worker.iter().map(|c| c.rmws).sum();
        let inserts: u64 = per_worker.iter().map(|c| c.inserts).sum();
        let loaded = self.config.record_count;
        let inserted = self.inserted.load(Ordering::Acquire);
        let taken = self.next_key.load(Ordering::Acquire) - loaded;
        if inserts != inserted || taken != inserted {
            return Err(format!(
                "inserts: workers committed {inserts}, {inserted} acknowledged, {taken} keys taken"
            ));
        }
        let expected = loaded + inserted;
        let len = self.table.committed_len() as u64;
        if len != expected {
            return Err(format!(
                "the table holds {len} records, expected {expected} ({loaded} loaded + {inserted} inserted)"
            ));
        }
        let mut versions = 0u64;
        let mut updated = 0u64;
        for key in 0..expected {
            let r = self
                .table
                .load(key)
                .ok_or_else(|| format!("record {key} is missing"))?;
            if r.key() != key {
                return Err(format!("record {key} holds the record of key {}", r.key()));
            }
            if r.fields().len() != self.config.value_size {
                return Err(format!(
                    "record {key} has {} bytes of fields, not {}",
                    r.fields().len(),
                    self.config.value_size
                ));
            }
            if !r.fields_match() {
                return Err(format!(
                    "record {key}: its fields are not those its write ({:?}) wrote",
                    r.stamp()
                ));
            }
            match r.stamp() {
                Stamp::Version(v) => versions += v,
                Stamp::Update { worker, seq } => {
                    let committed = per_worker.get(worker).map_or(0, |c| c.updates);
                    if seq >= committed {
                        return Err(format!(
                            "record {key} holds update {seq} of worker {worker}, which committed {committed} updates"
                        ));
                    }
                    updated += 1;
                }
            }
        }
        if versions != rmws {
            return Err(format!(
                "the records count {versions} read-modify-writes, {rmws} committed"
            ));
        }
        if updated > updates || (updates > 0 && updated == 0) {
            return Err(format!(
                "{updated} records hold an update, {updates} updates committed"
            ));
        }
        Ok(())
    }

    /// Replaces record `key` with a copy that claims another key, in a
    /// committed transaction, so that a test can see [`check`] fail and
    /// name the record. Panics if there is no record `key`.
    ///
    /// [`check`]: crate::Workload::check
    pub fn corrupt(&self, key: u64) {
        let r = self
            .table
            .load(key)
            .unwrap_or_else(|| panic!("no record {key} to corrupt"));
        let wrong = r.filed_as(key ^ 1);
        atomically(|tx| self.table.write(tx, key, wrong.clone()));
    }
}

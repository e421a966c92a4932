#include "muster/actors/durability/kv_durable.h"

#include <algorithm>
#include <utility>

#include <absl/strings/str_cat.h>

#include "muster/actors/durability/state_store.h"

namespace muster {

int KvDurable::Restore(const proto::RecoveredKvDirectory& recovered, KvStore& store) {
  int skipped = 0;
  for (int i = 0; i < recovered.entries_size(); ++i) {
    const proto::KvRecord& record = recovered.records(i);
    KvOwner owner{record.owner_task(), record.owner_incarnation()};
    bool ephemeral = !record.owner_task().empty() && record.owner_incarnation() != 0;
    if (!store.Restore(recovered.entries(i), ephemeral ? &owner : nullptr).ok()) ++skipped;
  }
  history_on_ = recovered.watched();
  for (const proto::KeyValueChangeEvent& event : recovered.history()) history_.push_back(event);
  while (history_.size() > kHistory) history_.pop_front();
  // The newest change carries the revision; the marker has it for a directory without changes
  // since it was first watched.
  int64_t revision = recovered.revision();
  if (!history_.empty()) revision = std::max(revision, history_.back().revision());
  store.RestoreRevision(revision);
  for (const auto& reply : recovered.replies()) {
    auto [it, added] = replies_.try_emplace(reply.client());
    if (added) it->second.place = clients_.insert(clients_.end(), reply.client());
    it->second.restored = true;
    if (it->second.by_seq.insert_or_assign(reply.seq(), reply.reply()).second) {
      it->second.recorded.push_back(reply.seq());
      ++restored_;
    }
  }
  return skipped;
}

void KvDurable::Record(const KvStore& store, const KvStore::Changes& changes, StateBatch& batch) {
  if (changes.empty()) return;
  const std::string& directory = store.directory();
  for (const proto::KeyValueChangeEvent& change : changes) {
    if (change.kind() == proto::KeyValueChangeEvent::DELETED) {
      batch.Delete(KvStateKey(change.key()));
    } else {
      proto::KvRecord record;
      record.set_value(change.value());
      if (const KvOwner* owner = store.OwnerOf(change.key())) {
        record.set_owner_task(owner->task);
        record.set_owner_incarnation(owner->incarnation);
      }
      batch.Put(KvStateKey(change.key()), record.SerializeAsString());
    }
    if (!history_on_) continue;
    proto::KvHistoryRecord event;
    *event.mutable_event() = change;
    batch.Put(KvHistoryStateKey(directory, change.revision()), event.SerializeAsString());
    history_.push_back(change);
    if (history_.size() > kHistory) {
      batch.Delete(KvHistoryStateKey(directory, history_.front().revision()));
      history_.pop_front();
    }
  }
}

void KvDurable::StartHistory(const KvStore& store, StateBatch& batch) {
  if (history_on_) return;
  history_on_ = true;
  proto::KvRevisionRecord marker;
  marker.set_revision(store.revision());
  marker.set_watched(true);
  batch.Put(KvRevisionStateKey(store.directory()), marker.SerializeAsString());
}

const proto::StoredReply* KvDurable::FindReply(const proto::RequestId& id) const {
  auto client = replies_.find(id.client());
  if (client == replies_.end()) return nullptr;
  auto reply = client->second.by_seq.find(id.seq());
  return reply == client->second.by_seq.end() ? nullptr : &reply->second;
}

bool KvDurable::AnsweredBefore(const proto::RequestId& id) const {
  auto client = replies_.find(id.client());
  return client != replies_.end() && id.seq() < client->second.answered_below;
}

void KvDurable::RememberReply(const std::string& directory, const proto::RequestId& id,
                              proto::StoredReply reply, StateBatch* records) {
  auto [client, added] = replies_.try_emplace(id.client());
  if (added) {
    client->second.place = clients_.insert(clients_.end(), id.client());
  } else {
    clients_.splice(clients_.end(), clients_, client->second.place);  // wrote last
  }
  ClientReplies& kept = client->second;
  std::string record = records != nullptr ? reply.SerializeAsString() : std::string();
  // A restored client counts from its first write on, once its bound has forgotten what it had.
  (kept.restored ? restored_ : kept_) -= kept.by_seq.size();
  kept.restored = false;
  kept.by_seq[id.seq()] = std::move(reply);
  // A bound above the write's own number counts as that number: this reply is kept.
  kept.answered_below = std::max(kept.answered_below, std::min(id.answered_below(), id.seq()));
  kept.by_seq.erase(kept.by_seq.begin(), kept.by_seq.lower_bound(kept.answered_below));
  if (records == nullptr) {
    while (kept.by_seq.size() > kRepliesPerClient) kept.by_seq.erase(kept.by_seq.begin());
  } else {
    kept.recorded.push_back(id.seq());
    TrimRecords(directory, id.client(), kept, *records);
  }
  kept_ += kept.by_seq.size();
  // This client wrote last and keeps at most kRepliesPerClient: it is never the one forgotten.
  while ((clients_.size() > kClients || kept_ > kReplies) && clients_.size() > 1) {
    ForgetOldestClient(directory, records);
  }
  if (records == nullptr) return;
  // The reply's record after every delete, in a unit of its own with the change the caller adds
  // next: a store that splits a large batch (etcd's operations per transaction) keeps the reply
  // and its change together, and deletes that land alone lose nothing.
  StateBatch own;
  own.Put(KvReplyStateKey(directory, id.client(), id.seq()), std::move(record));
  records->Append(std::move(own));
}

void KvDurable::TrimRecords(const std::string& directory, uint64_t client, ClientReplies& kept,
                            StateBatch& records) {
  // Every kept reply has a record (records are deleted with their replies), so the records
  // beyond the kept replies are of forgotten ones. Deleted oldest first; the record of a reply
  // still kept (a write in flight, made before later ones) goes to the back instead, and is
  // deleted only when every record is of a kept reply and there are too many.
  auto forgotten = [&] { return kept.recorded.size() - kept.by_seq.size(); };
  size_t passed = 0;  // kept ones moved back since the last delete
  while ((kept.recorded.size() > kRepliesPerClient || forgotten() > kAnsweredRecordsPerClient) &&
         passed < kept.recorded.size()) {
    const uint64_t oldest = kept.recorded.front();
    if (kept.by_seq.contains(oldest) && forgotten() > 0) {
      kept.recorded.pop_front();
      kept.recorded.push_back(oldest);
      ++passed;
      continue;
    }
    records.Delete(KvReplyStateKey(directory, client, oldest));
    kept.recorded.pop_front();
    kept.by_seq.erase(oldest);
    passed = 0;
  }
}

void KvDurable::ForgetOldestClient(const std::string& directory, StateBatch* records) {
  uint64_t oldest = clients_.front();
  clients_.pop_front();
  auto client = replies_.find(oldest);
  if (records != nullptr) {
    for (uint64_t seq : client->second.recorded) {
      records->Delete(KvReplyStateKey(directory, oldest, seq));
    }
  }
  (client->second.restored ? restored_ : kept_) -= client->second.by_seq.size();
  replies_.erase(client);
}

absl::StatusOr<std::vector<proto::KeyValueChangeEvent>> KvDurable::ChangesAfter(
    int64_t revision, int64_t current) const {
  if (revision > current) {
    return absl::OutOfRangeError(absl::StrCat("watch resume from revision ", revision,
                                              " is ahead of the directory's revision ", current,
                                              "; start a new watch"));
  }
  std::vector<proto::KeyValueChangeEvent> changes;
  if (revision == current) return changes;
  if (history_.empty() || history_.front().revision() > revision + 1) {
    return absl::OutOfRangeError(
        absl::StrCat("watch resume from revision ", revision, ": the leader keeps only the last ",
                     kHistory, " changes of a directory (oldest kept: ",
                     history_.empty() ? current : history_.front().revision(),
                     "); read the keys again and start a new watch"));
  }
  for (const proto::KeyValueChangeEvent& event : history_) {
    if (event.revision() > revision) changes.push_back(event);
  }
  return changes;
}

}  // namespace muster

// A YCSB-style driver for LevelDB: loads a table of 1 KB records, then runs one workload
// from several threads for a fixed time, printing throughput per interval and latency
// percentiles per operation.
//
//   ycsb_leveldb --db=DIR --workload=session|a|b|c|d|e [--threads=4] [--records=100000]
//                [--seconds=10] [--interval_ms=1000] [--value_size=1000] [--seed=1]
//
// Workloads (YCSB's core mixes; "zipfian" is YCSB's scrambled zipfian, theta 0.99):
//   session  50% reads (zipfian) / 50% inserts of new keys  (XSync's session-store mix)
//   a        50% reads / 50% updates, zipfian
//   b        95% reads / 5% updates, zipfian
//   c        100% reads, zipfian
//   d        95% reads of recent keys (latest) / 5% inserts
//   e        95% scans of 1..100 records from a zipfian start / 5% inserts
// Keys are "user" + a 64-bit FNV hash of the record number, so inserts land all over the
// key space, as in YCSB. Reads of the zipfian workloads choose among the records loaded or
// inserted so far (a read of an insert still in flight counts as a miss). Written for txmem's comparison of LevelDB plain and under
// libtxmem_elide_preload.so; LevelDB itself is not modified.

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

uint64_t fnv64(uint64_t v) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int i = 0; i < 8; i++) {
    h ^= v & 0xff;
    h *= 0x100000001B3ull;
    v >>= 8;
  }
  return h;
}

std::string key_of(uint64_t n) {
  char buf[32];
  snprintf(buf, sizeof buf, "user%020llu", (unsigned long long)fnv64(n));
  return buf;
}

// xorshift64*: a small, seedable generator per thread.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  double unit() { return (next() >> 11) * (1.0 / 9007199254740992.0); }
};

// Gray et al.'s zipfian generator over [0, n), as YCSB's ZipfianGenerator (theta 0.99).
struct Zipf {
  double theta = 0.99, alpha, zetan, eta, zeta2;
  uint64_t n;
  static double zeta(uint64_t n, double theta) {
    double s = 0;
    for (uint64_t i = 1; i <= n; i++) s += 1.0 / std::pow((double)i, theta);
    return s;
  }
  explicit Zipf(uint64_t items) : n(items) {
    zeta2 = zeta(2, theta);
    alpha = 1.0 / (1.0 - theta);
    zetan = zeta(n, theta);
    eta = (1 - std::pow(2.0 / n, 1 - theta)) / (1 - zeta2 / zetan);
  }
  uint64_t next(Rng& r) const {
    double u = r.unit(), uz = u * zetan;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, theta)) return 1;
    return (uint64_t)(n * std::pow(eta * u - eta + 1, alpha));
  }
};

// Nanosecond samples of one operation type, kept whole (sorted at the end).
struct Lat {
  std::vector<uint32_t> ns;
  void add(Clock::duration d) {
    auto v = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    ns.push_back((uint32_t)std::min<long long>(v, UINT32_MAX));
  }
};

struct Opts {
  std::string db = "/tmp/ycsb-leveldb", workload = "session";
  int threads = 4, seconds = 10, interval_ms = 1000, value_size = 1000;
  uint64_t records = 100000, seed = 1;
};

enum Op { READ, UPDATE, INSERT, SCAN, NOPS };
const char* kOpNames[NOPS] = {"read", "update", "insert", "scan"};

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    auto val = [&](const char* name) -> const char* {
      size_t n = strlen(name);
      return strncmp(a, name, n) == 0 && a[n] == '=' ? a + n + 1 : nullptr;
    };
    if (auto v = val("--db")) o.db = v;
    else if (auto v = val("--workload")) o.workload = v;
    else if (auto v = val("--threads")) o.threads = atoi(v);
    else if (auto v = val("--records")) o.records = strtoull(v, nullptr, 10);
    else if (auto v = val("--seconds")) o.seconds = atoi(v);
    else if (auto v = val("--interval_ms")) o.interval_ms = atoi(v);
    else if (auto v = val("--value_size")) o.value_size = atoi(v);
    else if (auto v = val("--seed")) o.seed = strtoull(v, nullptr, 10);
    else {
      fprintf(stderr, "unknown argument %s (see the source's first lines)\n", a);
      return 2;
    }
  }
  int read_pct, update_pct, insert_pct, scan_pct;
  bool latest = false;
  const std::string& w = o.workload;
  if (w == "session") read_pct = 50, update_pct = 0, insert_pct = 50, scan_pct = 0;
  else if (w == "a") read_pct = 50, update_pct = 50, insert_pct = 0, scan_pct = 0;
  else if (w == "b") read_pct = 95, update_pct = 5, insert_pct = 0, scan_pct = 0;
  else if (w == "c") read_pct = 100, update_pct = 0, insert_pct = 0, scan_pct = 0;
  else if (w == "d") read_pct = 95, update_pct = 0, insert_pct = 5, scan_pct = 0, latest = true;
  else if (w == "e") read_pct = 0, update_pct = 0, insert_pct = 5, scan_pct = 95;
  else {
    fprintf(stderr, "unknown workload %s\n", w.c_str());
    return 2;
  }
  (void)scan_pct;  // scans are what the other three shares leave

  leveldb::DestroyDB(o.db, leveldb::Options());
  leveldb::Options opt;
  opt.create_if_missing = true;
  leveldb::DB* db;
  leveldb::Status st = leveldb::DB::Open(opt, o.db, &db);
  if (!st.ok()) {
    fprintf(stderr, "open: %s\n", st.ToString().c_str());
    return 1;
  }
  std::string value(o.value_size, 'v');
  for (uint64_t i = 0; i < o.records; i += 1000) {
    leveldb::WriteBatch b;
    for (uint64_t j = i; j < std::min(o.records, i + 1000); j++) b.Put(key_of(j), value);
    if (!db->Write(leveldb::WriteOptions(), &b).ok()) return 1;
  }

  Zipf zipf(o.records);
  std::atomic<uint64_t> next_insert{o.records}, inserted{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<bool> stop{false};
  int intervals = o.seconds * 1000 / o.interval_ms + 1;
  std::vector<std::atomic<uint64_t>> per_interval(intervals);
  std::vector<std::vector<Lat>> lat(o.threads, std::vector<Lat>(NOPS));
  std::atomic<uint64_t> errors{0};
  Clock::time_point start = Clock::now();

  auto worker = [&](int t) {
    Rng r(o.seed * 1000 + t);
    std::string got, mine = value;
    leveldb::Status st;
    char vbuf[16];
    while (!stop.load(std::memory_order_relaxed)) {
      int p = (int)(r.next() % 100);
      Op op = p < read_pct ? READ
              : p < read_pct + update_pct ? UPDATE
              : p < read_pct + update_pct + insert_pct ? INSERT
              : SCAN;
      // Records loaded plus inserts finished. Inserts finish out of order, so a read may
      // choose one still in flight: it counts as a miss, not an error (YCSB's inserts
      // have the same window).
      uint64_t have = o.records + inserted.load(std::memory_order_acquire);
      // Zipfian over the loaded records, scrambled; "latest" counts back from the newest.
      uint64_t z = zipf.next(r);
      uint64_t rec = latest ? have - 1 - std::min(z, have - 1) : fnv64(z) % have;
      auto t0 = Clock::now();
      switch (op) {
        case READ:
          st = db->Get(leveldb::ReadOptions(), key_of(rec), &got);
          if (st.IsNotFound() && rec >= o.records) misses++;
          else if (!st.ok()) errors++;
          break;
        case UPDATE:
          snprintf(vbuf, sizeof vbuf, "%08x", (unsigned)r.next());
          memcpy(&mine[0], vbuf, 8);
          if (!db->Put(leveldb::WriteOptions(), key_of(rec), mine).ok()) errors++;
          break;
        case INSERT: {
          uint64_t n = next_insert.fetch_add(1);
          if (!db->Put(leveldb::WriteOptions(), key_of(n), mine).ok()) errors++;
          inserted.fetch_add(1, std::memory_order_release);
          break;
        }
        case SCAN: {
          int len = 1 + (int)(r.next() % 100);
          leveldb::Iterator* it = db->NewIterator(leveldb::ReadOptions());
          it->Seek(key_of(rec));
          for (int i = 0; i < len && it->Valid(); i++) it->Next();
          delete it;
          break;
        }
        default:
          break;
      }
      auto t1 = Clock::now();
      lat[t][op].add(t1 - t0);
      auto slot = std::chrono::duration_cast<std::chrono::milliseconds>(t1 - start).count() /
                  o.interval_ms;
      if (slot < intervals) per_interval[slot].fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> ths;
  for (int t = 0; t < o.threads; t++) ths.emplace_back(worker, t);
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  for (auto& th : ths) th.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();

  printf("# ycsb-leveldb workload=%s threads=%d records=%llu value=%dB seconds=%d\n",
         w.c_str(), o.threads, (unsigned long long)o.records, o.value_size, o.seconds);
  printf("interval_s ops_per_s\n");
  for (int i = 0; i + 1 < intervals; i++)
    printf("%.1f %.0f\n", (i + 1) * o.interval_ms / 1000.0,
           per_interval[i].load() * 1000.0 / o.interval_ms);
  printf("op count p10_us p25_us p50_us p75_us p90_us p99_us\n");
  uint64_t total = 0;
  for (int op = 0; op < NOPS; op++) {
    std::vector<uint32_t> all;
    for (auto& l : lat) all.insert(all.end(), l[op].ns.begin(), l[op].ns.end());
    if (all.empty()) continue;
    std::sort(all.begin(), all.end());
    total += all.size();
    auto q = [&](double f) { return all[(size_t)(f * (all.size() - 1))] / 1000.0; };
    printf("%s %zu %.2f %.2f %.2f %.2f %.2f %.2f\n", kOpNames[op], all.size(), q(0.10), q(0.25),
           q(0.50), q(0.75), q(0.90), q(0.99));
  }
  printf("throughput_ops_per_s %.0f\n", total / secs);
  printf("misses %llu\n", (unsigned long long)misses.load());
  printf("errors %llu\n", (unsigned long long)errors.load());
  delete db;
  leveldb::DestroyDB(o.db, leveldb::Options());
  return errors.load() == 0 ? 0 : 1;
}

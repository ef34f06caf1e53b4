//! YCSB on small tables: every workload on one thread and on several, with
//! one and with sixteen operations per transaction, passes its check; a
//! corrupted record fails it, naming the record; the zipfian generator
//! draws its ranks with the probabilities of the distribution.

use rand::rngs::SmallRng;
use rand::SeedableRng;

use txmem_db::ycsb::{Config, Distribution, Index, Mix, Ycsb, Zipfian};
use txmem_db::{Outcome, Workload};

const RECORDS: u64 = 2000;

fn small(mix: Mix, ops_per_txn: usize) -> Config {
    Config {
        record_count: RECORDS,
        ops_per_txn,
        load_threads: 2,
        ..Config::new(mix)
    }
}

/// Runs `txns` transactions on each of `threads` threads (worker `i` on
/// thread `i`) and returns every outcome.
fn run(y: &Ycsb, threads: usize, txns: usize) -> Vec<Outcome> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|worker| {
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(worker as u64 + 1);
                    (0..txns)
                        .map(|_| y.run_one(&mut rng, worker))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// Runs `config` on 1 and on 4 threads and checks the table after each.
fn runs_and_checks(config: Config) {
    let y = Ycsb::new(config.clone()).unwrap();
    assert_eq!(y.records(), RECORDS);
    y.check().unwrap();
    for threads in [1, 4] {
        let outcomes = run(&y, threads, 150);
        assert_eq!(outcomes.len(), threads * 150);
        for o in &outcomes {
            assert!(o.kind < y.kinds().len(), "{o:?}");
            assert!(o.attempts >= 1 && !o.rolled_back, "{o:?}");
        }
        y.check()
            .unwrap_or_else(|e| panic!("{} on {threads} threads: {e}", config.name()));
        // Both kinds of a mix with a writing operation occur.
        if config.ops_per_txn == 1 {
            for kind in 0..y.kinds().len() {
                assert!(
                    outcomes.iter().any(|o| o.kind == kind),
                    "{}: no {} transaction",
                    config.name(),
                    y.kinds()[kind]
                );
            }
        }
    }
    if config.mix.inserts() {
        assert!(y.records() > RECORDS, "{} inserted nothing", config.name());
    } else {
        assert_eq!(y.records(), RECORDS);
    }
}

#[test]
fn every_workload_runs_and_passes_its_check() {
    for mix in Mix::ALL {
        for ops in [1, 16] {
            runs_and_checks(small(mix, ops));
        }
    }
}

#[test]
fn every_distribution_and_index_runs() {
    for distribution in Distribution::ALL {
        runs_and_checks(Config {
            distribution: Some(distribution),
            ..small(Mix::F, 4)
        });
    }
    runs_and_checks(Config {
        index: Some(Index::Ordered),
        ..small(Mix::A, 16)
    });
    runs_and_checks(Config {
        value_size: 300,
        ..small(Mix::D, 4)
    });
}

#[test]
fn a_corrupted_record_fails_the_check_by_its_key() {
    for (mix, index) in [(Mix::A, Index::Hash), (Mix::E, Index::Ordered)] {
        let y = Ycsb::new(Config {
            index: Some(index),
            ..small(mix, 16)
        })
        .unwrap();
        run(&y, 2, 50);
        y.check().unwrap();
        y.corrupt(1234);
        let err = y.check().unwrap_err();
        assert!(err.contains("record 1234"), "{err}");
    }
}

#[test]
fn a_read_of_a_corrupted_record_is_reported() {
    let y = Ycsb::new(Config {
        record_count: 2,
        ..small(Mix::C, 4)
    })
    .unwrap();
    y.corrupt(1);
    run(&y, 1, 20);
    let err = y.check().unwrap_err();
    assert!(err.contains("a read of record 1 found record 0"), "{err}");
}

#[test]
fn bad_configurations_are_refused() {
    let err = Ycsb::new(Config {
        theta: 1.5,
        ..small(Mix::A, 1)
    })
    .err()
    .unwrap();
    assert!(err.contains("θ 1.5"), "{err}");
    let err = Ycsb::new(Config {
        index: Some(Index::Hash),
        ..small(Mix::E, 1)
    })
    .err()
    .unwrap();
    assert!(err.contains("ordered"), "{err}");
}

#[test]
#[should_panic(expected = "worker index 5000 out of range")]
fn an_unknown_worker_index_panics() {
    let y = Ycsb::new(small(Mix::C, 1)).unwrap();
    y.run_one(&mut SmallRng::seed_from_u64(1), 5000);
}

/// Draws `draws` ranks and returns how often each of the first `ranks`
/// came up.
fn frequencies(z: &Zipfian, draws: usize, ranks: usize) -> Vec<f64> {
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let mut counts = vec![0u64; ranks];
    for _ in 0..draws {
        let r = z.sample(&mut rng);
        assert!(r < z.items());
        if let Some(c) = counts.get_mut(r as usize) {
            *c += 1;
        }
    }
    counts.iter().map(|&c| c as f64 / draws as f64).collect()
}

#[test]
fn zipfian_ranks_come_up_as_often_as_the_distribution_says() {
    for (n, theta) in [(1_000_000u64, 0.99), (10_000, 0.5)] {
        let z = Zipfian::new(n, theta);
        let draws = 400_000;
        let f = frequencies(&z, draws, 100);
        // The first two ranks are drawn with exactly their probability:
        // the frequency is within 5 standard deviations of the binomial.
        for rank in 0..2 {
            let want = z.probability(rank);
            let sigma = (want * (1.0 - want) / draws as f64).sqrt();
            assert!(
                (f[rank as usize] - want).abs() < 5.0 * sigma,
                "n={n} θ={theta} rank {rank}: {} vs {want}",
                f[rank as usize]
            );
        }
        // Later ranks follow the distribution approximately (Gray et al.'s
        // formula gives rank 2 up to 20% too much at θ = 0.99, later ranks
        // less): ranks 2..100 together within 10%.
        let got: f64 = f[2..].iter().sum();
        let want: f64 = (2..100).map(|r| z.probability(r)).sum();
        assert!(
            (got - want).abs() < 0.1 * want,
            "n={n} θ={theta} ranks 2..100: {got} vs {want}"
        );
    }
}

#[test]
fn a_zipfian_grown_item_by_item_matches_one_built_at_its_size() {
    let mut grown = Zipfian::new(1000, 0.99);
    for n in 1001..=3000 {
        grown.resize(n);
    }
    let fresh = Zipfian::new(3000, 0.99);
    assert!((grown.zeta() - fresh.zeta()).abs() < 1e-9 * fresh.zeta());
    let (a, b) = (
        frequencies(&grown, 100_000, 3),
        frequencies(&fresh, 100_000, 3),
    );
    assert_eq!(a, b, "the same seed draws the same ranks");
}

//! Misuse of the executor is reported, not hung on.

use txmem_sim::{Sim, SimConfig, SimError};

#[test]
fn awaiting_a_foreign_future_is_an_error() {
    let mut sim = Sim::new(SimConfig {
        cores: 2,
        ..SimConfig::default()
    })
    .unwrap();
    let x = sim.alloc_lines(1);
    sim.spawn(0, move |cpu| async move {
        for _ in 0..100 {
            cpu.fetch_add(x, 1).await;
        }
    });
    sim.spawn(1, move |cpu| async move {
        cpu.load(x).await;
        std::future::pending::<()>().await;
    });
    match sim.run() {
        Err(SimError::Stuck(m)) => assert!(
            m.contains("core 1") && m.contains("not a simulator operation"),
            "{m}"
        ),
        other => panic!("expected a stuck core, got {other:?}"),
    }
}

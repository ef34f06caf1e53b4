use txmem::{atomically, TArray, TBox, TCounter};

#[test]
fn smoke() {
    let b = TBox::new(1u64);
    atomically(|tx| b.modify(tx, |v| v + 1));
    assert_eq!(b.load(), 2);
    let s = TBox::new(String::from("a"));
    atomically(|tx| s.modify(tx, |v| v + "b"));
    assert_eq!(s.load(), "ab");
    let a = TArray::new(100, 0u32);
    atomically(|tx| {
        for i in 0..100 {
            a.set(tx, i, i as u32)?;
        }
        Ok(())
    });
    let sum: u32 = atomically(|tx| (0..100).map(|i| a.get(tx, i)).sum());
    assert_eq!(sum, 4950);
    let c = TCounter::new(0);
    atomically(|tx| c.add(tx, 5));
    assert_eq!(c.load(), 5);
}

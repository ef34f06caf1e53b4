//! kmeans' three transactional variants track what they should: a point
//! added to `TCounter`s is `dims + 1` items, to the word STM twice that
//! (each total read and written), and to a cluster object one item. (One
//! test: txmem's statistics are process-wide, so runs must not overlap.)

use txmem_stamp::kmeans::{Kmeans, Params};
use txmem_stamp::{measure, Input, Variant};

#[test]
fn items_per_point_follow_the_representation() {
    let params = Params::of(Input::Dev);
    let app = Kmeans::new(params);
    let items = |v| measure(&app, v, 2).unwrap().items_per_commit();
    let dims = params.dims as f64;
    assert_eq!(items(Variant::Typed), dims + 1.0);
    assert_eq!(items(Variant::Words), 2.0 * (dims + 1.0));
    assert_eq!(items(Variant::TypedPlus), 1.0);
}

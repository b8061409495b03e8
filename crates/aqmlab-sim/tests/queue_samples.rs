//! The queue samples table: the four columns it always had come first and unchanged, and a
//! discipline's named statistics follow as columns of their own (its average queue excepted,
//! which is `avg`).

use aqmlab_core::qdisc::{NamedStat, AVERAGE_QUEUE};
use aqmlab_core::Time;
use aqmlab_model::record::{Column, QueueSamples};

fn names(t: &[(&'static str, Column)]) -> Vec<&'static str> {
    t.iter().map(|(n, _)| *n).collect()
}

fn f64s<'a>(t: &'a [(&'static str, Column)], name: &str) -> &'a [f64] {
    match t.iter().find(|(n, _)| *n == name).map(|(_, c)| c) {
        Some(Column::F64(v)) => v,
        _ => panic!("no f64 column {name}"),
    }
}

#[test]
fn named_statistics_follow_the_fixed_columns() {
    // Without named statistics (Drop-Tail): exactly the four columns.
    let mut plain = QueueSamples::default();
    plain.push(Time(5), 3, 3000, None);
    plain.push_named_stats(&[]);
    let t = plain.into_table();
    assert_eq!(names(&t), ["t_ns", "qlen_pkts", "qlen_bytes", "avg"]);
    assert!(f64s(&t, "avg")[0].is_nan());

    // RED: its average queue is `avg`, not a second column.
    let mut red = QueueSamples::default();
    red.push(Time(5), 3, 3000, Some(1.5));
    red.push_named_stats(&[NamedStat { name: AVERAGE_QUEUE, value: 1.5 }]);
    let t = red.into_table();
    assert_eq!(names(&t), ["t_ns", "qlen_pkts", "qlen_bytes", "avg"]);
    assert_eq!(f64s(&t, "avg"), [1.5]);

    // CoDel: two columns after `avg`, one value per sample, NaN where a sample lacked one.
    let mut codel = QueueSamples::default();
    let stat = |name, value| NamedStat { name, value };
    codel.push(Time(1), 0, 0, None);
    codel.push_named_stats(&[stat("dropping", 0.0), stat("drop_count", 0.0)]);
    codel.push(Time(2), 9, 9000, None);
    codel.push_named_stats(&[stat("dropping", 1.0)]);
    codel.push(Time(3), 9, 9000, None);
    codel.push_named_stats(&[stat("dropping", 1.0), stat("drop_count", 4.0)]);
    let t = codel.into_table();
    assert_eq!(names(&t), ["t_ns", "qlen_pkts", "qlen_bytes", "avg", "dropping", "drop_count"]);
    assert_eq!(f64s(&t, "dropping"), [0.0, 1.0, 1.0]);
    let count = f64s(&t, "drop_count");
    assert!(count[0] == 0.0 && count[1].is_nan() && count[2] == 4.0, "{count:?}");
}

//! Unit tests of `import`.

use super::*;

#[test]
fn names_are_safe_snake_case() {
    let names = column_names(
        [
            " First Name ",
            "firstName",
            "",
            "2024 total",
            "name\"; DROP TABLE x; --",
            "select",
            "end",
            "date",
            "current_date",
            "Name",
            "name",
            "Größe",
        ]
        .into_iter(),
    );
    assert_eq!(
        names,
        [
            "first_name",
            "first_name_2",
            "column_3",
            "c_2024_total",
            "name_drop_table_x",
            "select_",
            "end_",
            "date",
            "current_date_",
            "name",
            "name_2",
            "gr_e",
        ]
    );
}

#[test]
fn table_names_drop_the_extension_and_avoid_taken_ones() {
    let taken = HashSet::from(["sales".to_owned()]);
    assert_eq!(table_name("Sales.CSV", &taken), "sales_2");
    assert_eq!(
        table_name("dataset://q3/orders", &taken),
        "dataset_q3_orders"
    );
    assert_eq!(table_name("  ", &taken), "data");
    assert_eq!(table_name("2024", &taken), "t_2024");
}

#[test]
fn values_are_typed_only_when_they_all_fit() {
    let kind = |values: &[&str]| {
        let mut inference = Inference::default();
        values.iter().for_each(|v| inference.observe(v));
        inference.column_type()
    };
    assert_eq!(kind(&["1", "-2", "+3"]), ColumnType::Integer);
    assert_eq!(kind(&["1", "2.5", "1e3", ".5"]), ColumnType::Float);
    assert_eq!(kind(&["007", "1"]), ColumnType::Text);
    assert_eq!(kind(&["nan", "1.0"]), ColumnType::Text);
    assert_eq!(kind(&["TRUE", "false"]), ColumnType::Boolean);
    assert_eq!(kind(&["2024-02-29"]), ColumnType::Date);
    assert_eq!(kind(&["2023-02-29"]), ColumnType::Text);
    assert_eq!(
        kind(&[
            "2024-01-01 10:00:00",
            "2024-01-02T10:00:00.5Z",
            "2024-01-03"
        ]),
        ColumnType::Timestamp
    );
    assert_eq!(kind(&["9223372036854775808"]), ColumnType::Float);
    assert_eq!(kind(&[]), ColumnType::Text);
}

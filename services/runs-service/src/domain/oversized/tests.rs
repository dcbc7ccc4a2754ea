//! Which large results are tables, and the CSV they become.

use super::{Cut, NotTable, Shape, Tabular, first_rows, tabulate};

const COLUMNS: usize = 500;

fn csv_of(text: &str) -> (Shape, String) {
    match tabulate(text.to_owned(), COLUMNS) {
        Tabular::Table { shape, csv } => (shape, String::from_utf8(csv).expect("UTF-8")),
        other => panic!("not a table: {other:?}"),
    }
}

fn unusable(text: &str) -> NotTable {
    match tabulate(text.to_owned(), COLUMNS) {
        Tabular::Unusable(why) => why,
        other => panic!("expected an unusable table: {other:?}"),
    }
}

fn not_tabular(text: &str) -> bool {
    matches!(tabulate(text.to_owned(), COLUMNS), Tabular::NotTabular)
}

#[test]
fn a_json_array_of_objects_becomes_csv_with_every_key_as_a_column() {
    let text = r#"  [
        {"id": 1, "name": "north, east", "ok": true, "tags": ["a", "b"], "at": {"x": 1.5}},
        {"id": 9007199254740993, "name": "say \"hi\"", "extra": null, "ratio": 1.0},
        {"name": "line\nbreak", "id": -2, "missing": "later"}
    ] "#;
    let (shape, csv) = csv_of(text);
    assert_eq!(shape, Shape::JsonArray);
    assert_eq!(
        csv,
        "id,name,ok,tags,at,extra,ratio,missing\n\
         1,\"north, east\",true,\"[\"\"a\"\",\"\"b\"\"]\",\"{\"\"x\"\":1.5}\",,,\n\
         9007199254740993,\"say \"\"hi\"\"\",,,,,1.0,\n\
         -2,\"line\nbreak\",,,,,,later\n"
    );
}

#[test]
fn a_repeated_key_keeps_its_last_value() {
    let (_, csv) = csv_of(r#"[{"a": 1, "a": 2, "b": 3}]"#);
    assert_eq!(csv, "a,b\n2,3\n");
}

#[test]
fn newline_delimited_objects_become_csv() {
    let text = "{\"a\": 1, \"b\": \"x\"}\n\n{\"b\": \"y\", \"c\": [1]}\r\n{\"a\": 3}\n";
    let (shape, csv) = csv_of(text);
    assert_eq!(shape, Shape::Ndjson);
    assert_eq!(csv, "a,b,c\n1,x,\n,y,[1]\n3,,\n");
}

#[test]
fn csv_is_handed_on_as_it_is() {
    let text = "region,units\nnorth,3\nsouth,4\n\"west, far\",5\n";
    let (shape, csv) = csv_of(text);
    assert_eq!(shape, Shape::Csv);
    assert_eq!(csv, text);
}

#[test]
fn prose_a_single_object_and_an_array_of_numbers_are_not_tables() {
    assert!(not_tabular(
        "It was late, and cold.\nNobody came.\nThen, at last, the door opened.\n"
    ));
    assert!(not_tabular("one line, with a comma\nand another\n"));
    assert!(not_tabular("a,b\n1,2\n"), "one row is too few to tell");
    assert!(not_tabular(
        "name,a very long header of prose that goes on and on and on and on and on and on and on and on and on,\n1,2,3\n4,5,6\n"
    ));
    assert!(
        not_tabular("{\n  \"a\": 1,\n  \"b\": 2\n}\n"),
        "pretty-printed"
    );
    assert!(not_tabular("{\"a\": 1}\n"), "a single object");
    assert!(
        not_tabular("\n  \n{\n  \"a\": 1\n}\n"),
        "pretty-printed after blank lines"
    );
    assert!(not_tabular("[]"));
    assert!(not_tabular("[{}, {}]"), "objects without keys");
    assert_eq!(
        unusable("[1, 2, 3]"),
        NotTable::Json {
            shape: Shape::JsonArray,
            message: "invalid type: integer `1`, expected a JSON object at line 1 column 2".into()
        }
    );
}

#[test]
fn malformed_json_says_where() {
    assert_eq!(
        unusable("[{\"a\": 1},\n {\"a\": }]"),
        NotTable::Json {
            shape: Shape::JsonArray,
            message: "expected value at line 2 column 8".into()
        }
    );
    assert_eq!(
        unusable("[{\"a\": 1}] trailing"),
        NotTable::Json {
            shape: Shape::JsonArray,
            message: "trailing characters at line 1 column 12".into()
        }
    );
    assert_eq!(
        unusable("{\"a\": 1}\n{\"a\": 2}\n{\"a\": tru}\n"),
        NotTable::Json {
            shape: Shape::Ndjson,
            message: "expected ident at line 3 column 10".into()
        }
    );
    assert_eq!(
        unusable("{\"a\": 1}\n[2]\n"),
        NotTable::Json {
            shape: Shape::Ndjson,
            message: "invalid type: sequence, expected a JSON object at line 2 column 1".into()
        }
    );
}

#[test]
fn keys_are_bounded_at_the_column_limit() {
    let row = |keys: usize| {
        let fields: Vec<String> = (0..keys).map(|k| format!("\"k{k}\": {k}")).collect();
        format!("[{{{}}}]", fields.join(", "))
    };
    match tabulate(row(3), 3) {
        Tabular::Table { csv, .. } => assert_eq!(csv, b"k0,k1,k2\n0,1,2\n"),
        other => panic!("at the limit: {other:?}"),
    }
    assert!(matches!(
        tabulate(row(4), 3),
        Tabular::Unusable(NotTable::TooManyKeys { limit: 3 })
    ));
}

#[test]
fn a_huge_single_value_is_one_cell() {
    let value = "v".repeat(3 * 1024 * 1024);
    let (_, csv) = csv_of(&format!("[{{\"big\": \"{value}\"}}]"));
    assert_eq!(csv.len(), "big\n".len() + value.len() + 1);
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = format!(
        "[{{\"a\": {}{}}}]",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(matches!(
        tabulate(deep, COLUMNS),
        Tabular::Unusable(NotTable::Json { .. })
    ));
}

#[test]
fn first_rows_are_cut_and_show_nulls() {
    let rows = first_rows(b"a,b\n1,\n2,abcdef\n3,x\n", 2, 3);
    assert_eq!(rows, [["1", "NULL"], ["2", "abc"]]);
}

#[test]
fn a_cut_keeps_whole_characters_and_counts_lines() {
    let text = "ab\ncdé\nfg\n";
    let cut = Cut::of(text, 6);
    assert_eq!(cut.head, "ab\ncd", "é is two bytes and would pass 6");
    assert_eq!((cut.cut_line, cut.total_lines), (2, 3));
    assert_eq!((cut.total_bytes, cut.left_out()), (11, 6));
    let whole = Cut::of(text, text.len());
    assert_eq!(whole.left_out(), 0);
}

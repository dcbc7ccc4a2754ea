//! Table and column names a model can write in SQL without quotes.

use std::collections::HashSet;

use datafusion::sql::{
    parser::{DFParser, Statement as DfStatement},
    sqlparser::{ast, keywords},
};

/// Longest column or table name kept, before a uniqueness suffix.
const MAX_NAME_CHARS: usize = 63;

/// `base`, or `base_2`, `base_3`, … when taken; recorded as taken.
pub(super) fn unique(base: String, taken: &mut HashSet<String>) -> String {
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// Lowercase `snake_case` of `[a-z0-9_]`, never starting with a digit
/// (`digit_prefix` is put first) and always readable by the SQL parser as a
/// plain name; `None` when nothing usable is left.
pub(super) fn sanitize(raw: &str, digit_prefix: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut previous: Option<char> = None;
    for c in raw.trim().chars() {
        let lower_before = previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit());
        if c.is_ascii_uppercase() && lower_before {
            // camelCase → camel_case
            out.push('_');
        }
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
        previous = Some(c);
    }
    let mut name: String = out.trim_matches('_').chars().take(MAX_NAME_CHARS).collect();
    while name.ends_with('_') {
        name.pop();
    }
    if name.is_empty() {
        return None;
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, digit_prefix);
    }
    if !is_plain_identifier(&name) {
        name.push('_');
    }
    Some(name)
}

/// Whether the SQL parser reads `name` as a plain, unquoted table and column
/// name everywhere a query uses one: not a keyword the parser reserves in
/// some position (`select`, `end`, …) nor a function such as `current_date`.
fn is_plain_identifier(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if let Ok(index) = keywords::ALL_KEYWORDS.binary_search(&upper.as_str()) {
        let keyword = keywords::ALL_KEYWORDS_INDEX[index];
        if [
            keywords::RESERVED_FOR_TABLE_ALIAS,
            keywords::RESERVED_FOR_COLUMN_ALIAS,
            keywords::RESERVED_FOR_TABLE_FACTOR,
            keywords::RESERVED_FOR_IDENTIFIER,
        ]
        .iter()
        .any(|reserved| reserved.contains(&keyword))
        {
            return false;
        }
    }
    let sql = format!(
        "SELECT {name} FROM {name} WHERE {name} IS NOT NULL GROUP BY {name} ORDER BY {name}"
    );
    let Ok(mut statements) = DFParser::parse_sql(&sql) else {
        return false;
    };
    if statements.len() != 1 {
        return false;
    }
    let Some(DfStatement::Statement(statement)) = statements.pop_front() else {
        return false;
    };
    let ast::Statement::Query(query) = *statement else {
        return false;
    };
    let ast::SetExpr::Select(select) = *query.body else {
        return false;
    };
    let column_ok = matches!(
        select.projection.as_slice(),
        [ast::SelectItem::UnnamedExpr(ast::Expr::Identifier(ident))]
            if ident.value == name && ident.quote_style.is_none()
    );
    let table_ok = matches!(
        select.from.as_slice(),
        [ast::TableWithJoins {
            relation: ast::TableFactor::Table { name: table, alias: None, args: None, .. },
            joins,
        }] if joins.is_empty() && table.to_string() == name
    );
    column_ok && table_ok
}

//! The gate a query text passes before anything is planned: exactly one
//! read-only query, no recursion, and a size the planner handles in time.

use datafusion::sql::{
    parser::{DFParser, Statement as DfStatement},
    sqlparser::ast,
};

use crate::domain::datasource::{QueryError, Refusal};

/// Longest SQL text accepted; a model's query is far shorter.
const MAX_SQL_BYTES: usize = 64 * 1024;

/// Parses `sql` and returns its only statement when it is a query; refuses
/// everything else before any table is read.
pub(super) fn check_statement(sql: &str) -> Result<DfStatement, QueryError> {
    if sql.len() > MAX_SQL_BYTES {
        return Err(QueryError::Refused(Refusal::TooLong {
            bytes: sql.len(),
            limit: MAX_SQL_BYTES,
        }));
    }
    check_operators(sql)?;
    let mut statements =
        DFParser::parse_sql(sql).map_err(|e| QueryError::Engine(e.strip_backtrace()))?;
    if statements.len() != 1 {
        return Err(QueryError::Refused(Refusal::StatementCount(
            statements.len(),
        )));
    }
    let statement = statements
        .pop_front()
        .ok_or(QueryError::Refused(Refusal::NoStatement))?;
    let refused = |what: &str| QueryError::Refused(Refusal::NotReadOnly(what.to_owned()));
    match &statement {
        DfStatement::Statement(inner) => match inner.as_ref() {
            ast::Statement::Query(query) => {
                if query.with.as_ref().is_some_and(|with| with.recursive) {
                    // A recursive query can grow without end, each step
                    // outside the memory pool; the session also disables
                    // them wherever they are nested.
                    return Err(QueryError::Refused(Refusal::Recursive));
                }
                if let ast::SetExpr::Select(select) = query.body.as_ref()
                    && select.into.is_some()
                {
                    return Err(refused("SELECT … INTO"));
                }
                if !matches!(
                    query.body.as_ref(),
                    ast::SetExpr::Select(_)
                        | ast::SetExpr::Query(_)
                        | ast::SetExpr::SetOperation { .. }
                        | ast::SetExpr::Values(_)
                ) {
                    return Err(refused("a data change"));
                }
                Ok(statement)
            }
            other => Err(refused(&statement_kind(&other.to_string()))),
        },
        DfStatement::CreateExternalTable(_) => Err(refused("CREATE EXTERNAL TABLE")),
        DfStatement::CopyTo(_) => Err(refused("COPY")),
        DfStatement::Explain(_) => Err(refused("EXPLAIN")),
        DfStatement::Reset(_) => Err(refused("RESET")),
    }
}

/// Most operators in one query text.
///
/// The parser bounds nesting (parentheses, prefixes) but reads a chain such
/// as `1+1+1+…` or `a OR b OR …` in a loop, making a tree as deep as the
/// chain is long, which the planner then walks recursively: 20,000 links
/// overflow a thread's stack and abort the process. Lists (`IN (…)`, select
/// lists) are not chains and are not counted. Planning time grows faster
/// than the chain, and planning cannot be interrupted by the time limit.
const MAX_OPERATORS: usize = 128;

/// Most tokens (words, literals, symbols) in one query text: planning a list
/// of many thousand values (`IN (…)`, a select list) takes seconds that the
/// time limit cannot interrupt.
const MAX_TOKENS: usize = 4000;

/// Refuses a text with more than [`MAX_TOKENS`] tokens or more than
/// [`MAX_OPERATORS`] operators.
fn check_operators(sql: &str) -> Result<(), QueryError> {
    use datafusion::sql::sqlparser::{
        dialect::GenericDialect,
        tokenizer::{Token, Tokenizer},
    };
    let tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize()
        .map_err(|e| QueryError::Engine(format!("SQL error: {e}")))?;
    let words = tokens
        .iter()
        .filter(|token| !matches!(token, Token::Whitespace(_)))
        .count();
    if words > MAX_TOKENS {
        return Err(QueryError::Refused(Refusal::TooManyTokens {
            count: words,
            limit: MAX_TOKENS,
        }));
    }
    let operators = tokens.iter().filter(|token| is_operator(token)).count();
    if operators > MAX_OPERATORS {
        return Err(QueryError::Refused(Refusal::TooManyOperators {
            count: operators,
            limit: MAX_OPERATORS,
        }));
    }
    Ok(())
}

/// Whether `token` can join two expressions (an operator keyword or symbol).
fn is_operator(token: &datafusion::sql::sqlparser::tokenizer::Token) -> bool {
    use datafusion::sql::sqlparser::{keywords::Keyword, tokenizer::Token};
    match token {
        Token::Word(word) => matches!(
            word.keyword,
            Keyword::AND
                | Keyword::OR
                | Keyword::NOT
                | Keyword::IS
                | Keyword::LIKE
                | Keyword::ILIKE
                | Keyword::SIMILAR
                | Keyword::BETWEEN
                | Keyword::IN
                | Keyword::AT
                | Keyword::COLLATE
                | Keyword::DIV
                | Keyword::XOR
                | Keyword::OVERLAPS
        ),
        Token::EOF
        | Token::Number(..)
        | Token::Char(_)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::TripleSingleQuotedString(_)
        | Token::TripleDoubleQuotedString(_)
        | Token::DollarQuotedString(_)
        | Token::SingleQuotedByteStringLiteral(_)
        | Token::DoubleQuotedByteStringLiteral(_)
        | Token::TripleSingleQuotedByteStringLiteral(_)
        | Token::TripleDoubleQuotedByteStringLiteral(_)
        | Token::SingleQuotedRawStringLiteral(_)
        | Token::DoubleQuotedRawStringLiteral(_)
        | Token::TripleSingleQuotedRawStringLiteral(_)
        | Token::TripleDoubleQuotedRawStringLiteral(_)
        | Token::NationalStringLiteral(_)
        | Token::QuoteDelimitedStringLiteral(_)
        | Token::NationalQuoteDelimitedStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::UnicodeStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::Placeholder(_)
        | Token::Comma
        | Token::Whitespace(_)
        | Token::LParen
        | Token::RParen
        | Token::Period
        | Token::SemiColon
        | Token::RBracket
        | Token::RBrace => false,
        // Every other symbol can join two expressions.
        _ => true,
    }
}

/// The leading keywords of a statement, e.g. `DROP TABLE` or `INSERT`.
fn statement_kind(statement: &str) -> String {
    let mut words = statement.split_whitespace();
    let first = words
        .next()
        .unwrap_or("this statement")
        .to_ascii_uppercase();
    match (first.as_str(), words.next()) {
        ("CREATE" | "DROP" | "ALTER" | "TRUNCATE", Some(second)) => {
            format!("{first} {}", second.to_ascii_uppercase())
        }
        _ => first,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(sql: &str) -> String {
        match check_statement(sql) {
            Err(QueryError::Refused(why)) => crate::domain::texts::query_refusal(&why),
            other => panic!("{sql}: expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn only_single_queries_pass() {
        assert!(check_statement("SELECT 1").is_ok());
        assert!(check_statement("WITH a AS (SELECT 1 AS x) SELECT x FROM a").is_ok());
        assert!(check_statement("SELECT 1 UNION ALL SELECT 2").is_ok());
        assert!(refusal("DROP TABLE t").contains("DROP TABLE"));
        assert!(refusal("INSERT INTO t VALUES (1)").contains("INSERT"));
        assert!(refusal("COPY (SELECT 1) TO '/tmp/x.csv'").contains("COPY"));
        assert!(refusal("SELECT 1; SELECT 2").contains("exactly one"));
        assert!(refusal("SELECT 1 INTO t").contains("INTO"));
        assert!(refusal(&"x".repeat(MAX_SQL_BYTES + 1)).contains("limit"));
        assert!(refusal("WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r").contains("recursive"));
        let chain = format!("SELECT 1{}", "+1".repeat(MAX_OPERATORS + 1));
        assert!(refusal(&chain).contains("operators"));
        assert!(check_statement(&format!("SELECT 1{}", "+1".repeat(MAX_OPERATORS))).is_ok());
        let list = (0..MAX_TOKENS).map(|i| i.to_string()).collect::<Vec<_>>();
        assert!(refusal(&format!("SELECT 1 WHERE 1 IN ({})", list.join(","))).contains("tokens"));
        assert!(matches!(
            check_statement("SELEC 1"),
            Err(QueryError::Engine(_))
        ));
    }
}

//! The optional properties a strict schema turned into required nullable
//! ones, so that a model's `null` for them can be taken back out.

use std::collections::BTreeMap;

use serde_json::Value;

/// Where, in a tool's arguments, a `null` stands for a property the model
/// left out: OpenAI's strict mode requires every property, so an optional
/// one is offered as "this type or null", and the server, whose schema does
/// not accept `null` there, must receive the property absent instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NullFields {
    fields: BTreeMap<String, Field>,
    items: Option<Box<NullFields>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Field {
    /// A `null` here means "left out".
    drop_null: bool,
    /// The property's own object or array value.
    inner: NullFields,
}

impl NullFields {
    /// True when no `null` is ever taken out: the arguments go as they came.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.items.is_none()
    }

    pub(super) fn optional(&mut self, name: &str, inner: Self) {
        self.fields.insert(
            name.to_owned(),
            Field {
                drop_null: true,
                inner,
            },
        );
    }

    pub(super) fn nested(&mut self, name: &str, inner: Self) {
        if !inner.is_empty() {
            self.fields.insert(
                name.to_owned(),
                Field {
                    drop_null: false,
                    inner,
                },
            );
        }
    }

    pub(super) fn in_items(inner: Self) -> Self {
        Self {
            fields: BTreeMap::new(),
            items: (!inner.is_empty()).then(|| Box::new(inner)),
        }
    }

    /// Takes out of `value` every `null` that stands for a left-out
    /// property; true when something was taken out.
    pub fn remove_from(&self, value: &mut Value) -> bool {
        let mut changed = false;
        match value {
            Value::Object(object) => {
                for (name, field) in &self.fields {
                    if field.drop_null && object.get(name).is_some_and(Value::is_null) {
                        object.remove(name);
                        changed = true;
                    } else if let Some(inner) = object.get_mut(name) {
                        changed |= field.inner.remove_from(inner);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(each) = &self.items {
                    for item in items {
                        changed |= each.remove_from(item);
                    }
                }
            }
            _ => {}
        }
        changed
    }

    /// The arguments a model sent, as the server's schema expects them: the
    /// same text when nothing stands for a left-out property.
    pub fn arguments_for_server(&self, arguments: String) -> String {
        if self.is_empty() || !arguments.contains("null") {
            return arguments;
        }
        let Ok(mut value) = serde_json::from_str::<Value>(&arguments) else {
            // Not JSON: the argument check answers the model about it.
            return arguments;
        };
        if self.remove_from(&mut value) {
            value.to_string()
        } else {
            arguments
        }
    }
}

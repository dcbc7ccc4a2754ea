//! Descriptor sets read into tools, hostile ones refused at their bound,
//! and arguments made into request messages under the JSON mapping.

use prost::Message as _;
use prost_types::{
    DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet,
    MethodDescriptorProto, ServiceDescriptorProto, field_descriptor_proto::Type,
};
use serde_json::{Map, Value, json};

use super::{GrpcLimits, ServiceSchema, message};

/// `source` compiled as `t.proto`, with the well-known types it imports.
fn compile(source: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("t.proto"), source).expect("written");
    protox::compile(["t.proto"], [dir.path()])
        .expect("compiles")
        .encode_to_vec()
}

const SHOP: &str = r#"
syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

service Shop {
  // Reads an order.
  rpc GetOrder(GetOrderRequest) returns (Order);
  rpc WatchOrders(GetOrderRequest) returns (stream Order);
  rpc Upload(stream Order) returns (Order);
}

service Admin {
  rpc Prune(Node) returns (Node);
  rpc Ping(GetOrderRequest) returns (Order);
}

enum State { STATE_UNSPECIFIED = 0; STATE_OPEN = 1; }

message GetOrderRequest {
  int64 order_id = 1;
  uint64 customer = 2;
  State state = 3;
  google.protobuf.Timestamp since = 4;
  google.protobuf.Int32Value limit = 5;
  map<string, int32> counts = 6;
  repeated string tags = 7;
  bytes blob = 8;
  oneof by { string email = 9; string phone = 10; }
}

message Order { int64 id = 1; string note = 2; }

message Node { string name = 1; repeated Node children = 2; }
"#;

fn read(selection: &[&str]) -> ServiceSchema {
    let selection: Vec<String> = selection.iter().map(|s| (*s).to_owned()).collect();
    ServiceSchema::read(&compile(SHOP), &selection, &GrpcLimits::default()).expect("read")
}

#[test]
fn unary_and_server_streaming_methods_become_tools_under_the_json_mapping() {
    let schema = read(&[]);
    let tools: Vec<&str> = schema.methods.iter().map(|m| m.tool.as_str()).collect();
    assert_eq!(tools, ["Admin_Ping", "Shop_GetOrder", "Shop_WatchOrders"]);
    assert_eq!(schema.services, ["shop.v1.Admin", "shop.v1.Shop"]);
    let get = schema.method("Shop_GetOrder").expect("offered");
    assert_eq!(get.path, "/shop.v1.Shop/GetOrder");
    assert!(
        get.description.starts_with("Reads an order."),
        "{}",
        get.description
    );
    assert!(!get.server_streaming);
    assert!(
        schema
            .method("Shop_WatchOrders")
            .expect("offered")
            .server_streaming
    );
    let properties = &get.input_schema["properties"];
    assert_eq!(properties["orderId"]["type"], "string");
    assert_eq!(properties["orderId"]["pattern"], "^-?[0-9]{1,19}$");
    assert_eq!(properties["customer"]["pattern"], "^[0-9]{1,20}$");
    assert_eq!(
        properties["state"]["enum"],
        json!(["STATE_UNSPECIFIED", "STATE_OPEN"])
    );
    assert_eq!(properties["since"]["format"], "date-time");
    assert_eq!(properties["limit"]["type"], "integer");
    assert_eq!(
        properties["counts"]["additionalProperties"]["type"],
        "integer"
    );
    assert_eq!(properties["tags"]["items"]["type"], "string");
    assert_eq!(properties["blob"]["contentEncoding"], "base64");
    assert_eq!(get.input_schema["additionalProperties"], false);
    assert_eq!(
        get.input_schema["description"],
        "Set at most one of each group: email, phone."
    );
}

#[test]
fn client_streaming_and_self_containing_requests_are_left_out_with_why() {
    let schema = read(&[]);
    let why: Vec<String> = schema.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(why.len(), 2, "{why:?}");
    assert!(
        why.iter()
            .any(|w| w.starts_with("shop.v1.Shop/Upload: client streaming"))
    );
    assert!(
        why.iter().any(|w| w
            == "shop.v1.Admin/Prune: its request contains itself (shop.v1.Node → shop.v1.Node), \
                which no finite schema describes"),
        "{why:?}"
    );
}

#[test]
fn a_selection_names_services_or_methods_and_unknown_entries_are_reported() {
    let schema = read(&["shop.v1.Admin", "shop.v1.Shop/GetOrder"]);
    let tools: Vec<&str> = schema.methods.iter().map(|m| m.tool.as_str()).collect();
    assert_eq!(tools, ["Admin_Ping", "Shop_GetOrder"]);
    let asked = [
        "shop.v1.Shop/GetOrder".to_owned(),
        "shop.v1.Shop/Nope".to_owned(),
    ];
    assert_eq!(
        schema.unknown(&asked),
        [(1, "shop.v1.Shop/Nope".to_owned())]
    );
}

#[test]
fn arguments_become_the_request_and_64_bit_integers_arrive_exact() {
    let schema = read(&[]);
    let get = schema.method("Shop_GetOrder").expect("offered");
    let arguments: Map<String, Value> = serde_json::from_value(json!({
        "orderId": "9007199254740993",
        "state": "STATE_OPEN",
        "since": "2026-01-31T09:30:00Z",
        "email": "a@example.com",
    }))
    .expect("an object");
    let request = message::request(&get.descriptor.input(), &arguments).expect("fits");
    let written = message::to_json(&request);
    assert_eq!(written["orderId"], "9007199254740993");
    assert_eq!(written["since"], "2026-01-31T09:30:00Z");
    let unknown: Map<String, Value> =
        serde_json::from_value(json!({"orderID": "1"})).expect("an object");
    let refused = message::request(&get.descriptor.input(), &unknown).expect_err("refused");
    assert!(refused.contains("shop.v1.GetOrderRequest"), "{refused}");
    assert!(refused.contains("orderID"), "{refused}");
}

/// A set of one file holding `messages` and a service `S` with `methods`
/// methods, each taking and returning the first message.
fn set(
    messages: Vec<DescriptorProto>,
    methods: usize,
    enums: Vec<prost_types::EnumDescriptorProto>,
) -> Vec<u8> {
    let input = format!(".h.{}", messages[0].name());
    let method = |i: usize| MethodDescriptorProto {
        name: Some(format!("M{i}")),
        input_type: Some(input.clone()),
        output_type: Some(input.clone()),
        ..Default::default()
    };
    FileDescriptorSet {
        file: vec![FileDescriptorProto {
            name: Some("h.proto".into()),
            package: Some("h".into()),
            syntax: Some("proto3".into()),
            message_type: messages,
            enum_type: enums,
            service: vec![ServiceDescriptorProto {
                name: Some("S".into()),
                method: (0..methods).map(method).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

fn field(name: &str, number: i32, message: Option<&str>) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        r#type: Some(if message.is_some() {
            Type::Message
        } else {
            Type::String
        } as i32),
        type_name: message.map(|m| format!(".h.{m}")),
        label: Some(1),
        json_name: Some(name.into()),
        ..Default::default()
    }
}

fn message_of(name: &str, fields: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.into()),
        field: fields,
        ..Default::default()
    }
}

fn refusal(bytes: &[u8], limits: &GrpcLimits) -> String {
    ServiceSchema::read(bytes, &[], limits)
        .expect_err("refused")
        .to_string()
}

#[test]
fn a_set_of_100_000_methods_is_refused_naming_the_bound() {
    let bytes = set(vec![message_of("R", vec![])], 100_000, vec![]);
    assert_eq!(
        refusal(&bytes, &GrpcLimits::default()),
        "descriptor set: has 100000 methods, more than 1000"
    );
    let small = GrpcLimits {
        max_methods: 2,
        ..GrpcLimits::default()
    };
    let three = set(vec![message_of("R", vec![])], 3, vec![]);
    assert_eq!(
        refusal(&three, &small),
        "descriptor set: has 3 methods, more than 2"
    );
    let two = set(vec![message_of("R", vec![])], 2, vec![]);
    assert_eq!(
        ServiceSchema::read(&two, &[], &small)
            .expect("read")
            .methods
            .len(),
        2
    );
}

#[test]
fn a_set_past_its_size_or_not_a_descriptor_set_is_refused() {
    let large = vec![0_u8; 4 * 1024 * 1024 + 1];
    assert_eq!(
        refusal(&large, &GrpcLimits::default()),
        "descriptor set: is 4194305 bytes, more than 4194304"
    );
    let garbage = refusal(b"\xff\xff\xff", &GrpcLimits::default());
    assert!(
        garbage.starts_with("descriptor set: is not valid"),
        "{garbage}"
    );
}

#[test]
fn a_schema_that_amplifies_or_nests_too_deep_is_refused_whole() {
    // Each level holds the next ten times: 10^5 nodes from 6 messages.
    let levels = ["L0", "L1", "L2", "L3", "L4", "L5"];
    let mut messages: Vec<DescriptorProto> = levels
        .windows(2)
        .map(|w| {
            let fields = (1..=10)
                .map(|i| field(&format!("f{i}"), i, Some(w[1])))
                .collect();
            message_of(w[0], fields)
        })
        .collect();
    messages.push(message_of("L5", vec![field("leaf", 1, None)]));
    let bomb = refusal(&set(messages, 1, vec![]), &GrpcLimits::default());
    assert_eq!(bomb, "h.S/M0: its input schema has more than 10000 nodes");

    let chain: Vec<DescriptorProto> = (0..40)
        .map(|i| {
            let next = format!("D{}", i + 1);
            let fields = if i < 39 {
                vec![field("next", 1, Some(&next))]
            } else {
                vec![]
            };
            message_of(&format!("D{i}"), fields)
        })
        .collect();
    let deep = refusal(&set(chain, 1, vec![]), &GrpcLimits::default());
    assert_eq!(deep, "h.S/M0: its input schema nests more than 32 messages");
}

#[test]
fn an_enum_past_its_bound_is_refused() {
    let values = (0..1001)
        .map(|i| prost_types::EnumValueDescriptorProto {
            name: Some(format!("V{i}")),
            number: Some(i),
            ..Default::default()
        })
        .collect();
    let enumeration = prost_types::EnumDescriptorProto {
        name: Some("Big".into()),
        value: values,
        ..Default::default()
    };
    let mut holder = field("big", 1, None);
    holder.r#type = Some(Type::Enum as i32);
    holder.type_name = Some(".h.Big".into());
    let bytes = set(vec![message_of("R", vec![holder])], 1, vec![enumeration]);
    assert_eq!(
        refusal(&bytes, &GrpcLimits::default()),
        "h.S/M0: enum h.Big has 1001 values, more than 1000"
    );
}

#[test]
fn a_file_of_a_syntax_not_read_is_refused_not_a_panic() {
    // One file `a.proto` with `syntax = "proto5"` (found by fuzzing: the
    // library indexed past its files).
    let bytes = [
        0x0a, 0x11, 0x0a, 0x07, b'a', b'.', b'p', b'r', b'o', b't', b'o', 0x62, 0x06, b'p', b'r',
        b'o', b't', b'o', b'5',
    ];
    assert_eq!(
        refusal(&bytes, &GrpcLimits::default()),
        "descriptor set: a.proto has syntax \"proto5\"; proto2 and proto3 are read"
    );
}

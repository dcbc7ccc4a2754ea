//! The descriptor set: a client builds its pool from it alone.

use prost::Message as _;
use switchboard_example_grpc_service::FILE_DESCRIPTOR_SET;

#[test]
fn the_descriptor_set_holds_the_inventory_and_the_well_known_types_it_imports() {
    let set = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).expect("it decodes");
    let names: Vec<_> = set.file.iter().map(|f| f.name()).collect();
    for expected in [
        "example/inventory/v1/inventory.proto",
        "google/protobuf/timestamp.proto",
        "google/protobuf/duration.proto",
        "google/protobuf/empty.proto",
        "google/protobuf/struct.proto",
        "google/protobuf/wrappers.proto",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
}

//! The inventory's methods: items, errors with details, streams, and what
//! the last call carried.

use switchboard_example_grpc_service::{
    SEEDED_ITEM_ID,
    inventory::v1::{GetItemRequest, Item, Kind, ListItemsRequest, PutItemRequest, item::Price},
    seeded_item,
};
use tonic::Code;
use tonic_types::StatusExt as _;

use crate::client;

#[tokio::test]
async fn get_item_returns_the_seeded_item_with_its_exact_64_bit_id() {
    let mut client = client().await;
    let item = client
        .get_item(GetItemRequest { id: SEEDED_ITEM_ID })
        .await
        .expect("the seeded item is there")
        .into_inner();
    assert_eq!(item.id, 9_007_199_254_740_993);
    assert_eq!(item.name, "anvil");
    assert_eq!(item.kind(), Kind::Tool);
    assert_eq!(item.stock, Some(3));
    assert_eq!(item.labels.get("aisle").map(String::as_str), Some("7"));
    assert_eq!(item.price, Some(Price::Cents(1999)));
    assert_eq!(item, seeded_item());
}

#[tokio::test]
async fn get_item_of_id_0_is_invalid_argument_with_a_bad_request_detail() {
    let mut client = client().await;
    let status = client
        .get_item(GetItemRequest { id: 0 })
        .await
        .expect_err("id 0 is refused");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(status.message(), "id must not be 0");
    let bad_request = status
        .get_details_bad_request()
        .expect("a BadRequest detail");
    let violation = &bad_request.field_violations[0];
    assert_eq!(violation.field, "id");
    assert_eq!(violation.description, "must not be 0");
}

#[tokio::test]
async fn get_item_of_an_unknown_id_is_not_found_with_a_resource_info_detail() {
    let mut client = client().await;
    let status = client
        .get_item(GetItemRequest { id: 42 })
        .await
        .expect_err("no item 42");
    assert_eq!(status.code(), Code::NotFound);
    assert_eq!(status.message(), "no item 42");
    let info = status
        .get_details_resource_info()
        .expect("a ResourceInfo detail");
    assert_eq!(info.resource_type, "example.inventory.v1.Item");
    assert_eq!(info.resource_name, "42");
}

#[tokio::test]
async fn put_item_stores_it_until_delete_item_removes_it() {
    let mut client = client().await;
    let item = Item {
        id: -5,
        name: "vise".to_owned(),
        price: Some(Price::Quote("ask".to_owned())),
        ..Item::default()
    };
    let put = client
        .put_item(PutItemRequest {
            item: Some(item.clone()),
        })
        .await
        .expect("the item is stored")
        .into_inner();
    assert_eq!(put, item);
    let got = client.get_item(GetItemRequest { id: -5 }).await;
    assert_eq!(got.expect("the stored item").into_inner(), item);

    client
        .delete_item(GetItemRequest { id: -5 })
        .await
        .expect("the item is deleted");
    let status = client
        .delete_item(GetItemRequest { id: -5 })
        .await
        .expect_err("the item is gone");
    assert_eq!(status.code(), Code::NotFound);
}

#[tokio::test]
async fn put_item_of_id_0_is_invalid_argument() {
    let mut client = client().await;
    let status = client
        .put_item(PutItemRequest { item: None })
        .await
        .expect_err("an item without id is refused");
    assert_eq!(status.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn list_items_streams_count_items_one_message_each() {
    let mut client = client().await;
    let mut stream = client
        .list_items(ListItemsRequest { count: 3 })
        .await
        .expect("the stream starts")
        .into_inner();
    let mut items = Vec::new();
    while let Some(item) = stream.message().await.expect("the stream goes on") {
        items.push((item.id, item.name));
    }
    let expected =
        [(1, "item-1"), (2, "item-2"), (3, "item-3")].map(|(id, name)| (id, name.to_owned()));
    assert_eq!(items, expected);
}

#[tokio::test]
async fn last_call_reports_the_metadata_and_count_of_the_other_calls() {
    let mut client = client().await;
    let mut request = tonic::Request::new(GetItemRequest { id: SEEDED_ITEM_ID });
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let metadata = request.metadata_mut();
    metadata.insert("traceparent", traceparent.parse().expect("ascii"));
    metadata.insert("authorization", "Bearer upstream".parse().expect("ascii"));
    client.get_item(request).await.expect("the seeded item");
    client
        .get_item(GetItemRequest { id: SEEDED_ITEM_ID })
        .await
        .expect("the seeded item");

    let seen = client.last_call(()).await.expect("last call").into_inner();
    assert_eq!(
        (seen.traceparent.as_str(), seen.authorization.as_str()),
        ("", "")
    );
    assert_eq!(seen.calls, 2);

    let mut request = tonic::Request::new(ListItemsRequest { count: 0 });
    let metadata = request.metadata_mut();
    metadata.insert("traceparent", traceparent.parse().expect("ascii"));
    metadata.insert("authorization", "Bearer upstream".parse().expect("ascii"));
    client.list_items(request).await.expect("an empty stream");
    let seen = client.last_call(()).await.expect("last call").into_inner();
    assert_eq!(seen.traceparent, traceparent);
    assert_eq!(seen.authorization, "Bearer upstream");
    assert_eq!(seen.calls, 3, "LastCall itself is not counted");
}

#[tokio::test]
async fn upload_items_returns_the_last_item_received() {
    let mut client = client().await;
    let items = (1..=3).map(|id| Item {
        id,
        ..Item::default()
    });
    let last = client
        .upload_items(tokio_stream::iter(items))
        .await
        .expect("the upload completes")
        .into_inner();
    assert_eq!(last.id, 3);
    let none = client
        .upload_items(tokio_stream::iter(Vec::<Item>::new()))
        .await
        .expect("an empty upload completes")
        .into_inner();
    assert_eq!(none, Item::default());
}

//! The inventory's behaviour: items kept in memory, shared by every call,
//! and what the last call carried, for the tests to read back.

use std::{
    collections::HashMap,
    pin::Pin,
    sync::{Mutex, MutexGuard, PoisonError},
};

use tokio_stream::Stream;
use tonic::{Code, Request, Response, Status, Streaming, metadata::MetadataMap};
use tonic_types::{ErrorDetails, StatusExt as _};

use crate::inventory::v1::{
    self as pb,
    inventory_server::{Inventory, InventoryServer},
};

/// The id of the item the inventory starts with: 2^53 + 1, which a client
/// that passes 64-bit integers through a JSON number would round.
pub const SEEDED_ITEM_ID: i64 = 9_007_199_254_740_993;

/// The most items one `ListItems` call streams, whatever `count` asks for.
const MAX_LISTED_ITEMS: u32 = 100_000;

/// The `resource_type` of the `ResourceInfo` detail of a missing item.
const ITEM_RESOURCE_TYPE: &str = "example.inventory.v1.Item";

/// Creation time of the seeded item: 2024-01-02T03:04:05Z.
const SEEDED_CREATED_AT_SECONDS: i64 = 1_704_164_645;

/// The item the inventory starts with: id [`SEEDED_ITEM_ID`], an anvil.
pub fn seeded_item() -> pb::Item {
    pb::Item {
        id: SEEDED_ITEM_ID,
        name: "anvil".to_owned(),
        kind: pb::Kind::Tool.into(),
        created_at: Some(prost_types::Timestamp {
            seconds: SEEDED_CREATED_AT_SECONDS,
            nanos: 0,
        }),
        stock: Some(3),
        labels: HashMap::from([("aisle".to_owned(), "7".to_owned())]),
        price: Some(pb::item::Price::Cents(1999)),
        ..pb::Item::default()
    }
}

/// Why a call failed; mapped to a gRPC status (with google.rpc details) in
/// one place, the `From` impl below.
#[derive(Debug)]
enum InventoryError {
    /// The request named item id 0, which no item has.
    ZeroId,
    /// No item has this id.
    NotFound(i64),
}

impl From<InventoryError> for Status {
    fn from(error: InventoryError) -> Self {
        match error {
            InventoryError::ZeroId => Status::with_error_details(
                Code::InvalidArgument,
                "id must not be 0",
                ErrorDetails::with_bad_request_violation("id", "must not be 0"),
            ),
            InventoryError::NotFound(id) => Status::with_error_details(
                Code::NotFound,
                format!("no item {id}"),
                ErrorDetails::with_resource_info(ITEM_RESOURCE_TYPE, id.to_string(), "", ""),
            ),
        }
    }
}

/// `id` if it can name an item (it is not 0).
fn item_id(id: i64) -> Result<i64, InventoryError> {
    if id == 0 {
        Err(InventoryError::ZeroId)
    } else {
        Ok(id)
    }
}

/// The value of the metadata entry `key`, empty when it is absent or not
/// printable ASCII.
fn metadata_value(metadata: &MetadataMap, key: &str) -> String {
    metadata
        .get(key)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// Item `n` of a `ListItems` stream.
fn listed_item(n: u32) -> Result<pb::Item, Status> {
    Ok(pb::Item {
        id: i64::from(n),
        name: format!("item-{n}"),
        ..pb::Item::default()
    })
}

/// What every call shares.
#[derive(Debug, Default)]
struct State {
    /// The items, by id.
    items: HashMap<i64, pb::Item>,
    /// What the last call to a method other than `LastCall` carried, and how
    /// many such calls there were.
    last_call: pb::CallSeen,
}

/// The `example.inventory.v1.Inventory` service, its state in memory.
#[derive(Debug, Default)]
pub struct InventoryService {
    state: Mutex<State>,
}

impl InventoryService {
    /// An inventory holding only [`seeded_item`].
    pub fn seeded() -> Self {
        let item = seeded_item();
        let state = State {
            items: HashMap::from([(item.id, item)]),
            last_call: pb::CallSeen::default(),
        };
        Self {
            state: Mutex::new(state),
        }
    }

    /// The tonic server of this inventory, ready to be added to a router.
    pub fn into_server(self) -> InventoryServer<Self> {
        InventoryServer::new(self)
    }

    /// The state; a call that panicked holding it left it consistent, since
    /// every change is a single map operation or assignment.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers what a call carried, and counts it.
    fn record(&self, metadata: &MetadataMap) {
        let mut state = self.lock();
        state.last_call = pb::CallSeen {
            traceparent: metadata_value(metadata, "traceparent"),
            authorization: metadata_value(metadata, "authorization"),
            calls: state.last_call.calls + 1,
        };
    }
}

/// The stream `ListItems` answers with.
type ItemStream = Pin<Box<dyn Stream<Item = Result<pb::Item, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl Inventory for InventoryService {
    async fn get_item(
        &self,
        request: Request<pb::GetItemRequest>,
    ) -> Result<Response<pb::Item>, Status> {
        self.record(request.metadata());
        let id = item_id(request.get_ref().id)?;
        let item = self.lock().items.get(&id).cloned();
        let item = item.ok_or(InventoryError::NotFound(id))?;
        Ok(Response::new(item))
    }

    async fn put_item(
        &self,
        request: Request<pb::PutItemRequest>,
    ) -> Result<Response<pb::Item>, Status> {
        self.record(request.metadata());
        let item = request.into_inner().item.unwrap_or_default();
        let id = item_id(item.id)?;
        self.lock().items.insert(id, item.clone());
        Ok(Response::new(item))
    }

    async fn delete_item(
        &self,
        request: Request<pb::GetItemRequest>,
    ) -> Result<Response<()>, Status> {
        self.record(request.metadata());
        let id = item_id(request.get_ref().id)?;
        let removed = self.lock().items.remove(&id);
        removed.ok_or(InventoryError::NotFound(id))?;
        Ok(Response::new(()))
    }

    type ListItemsStream = ItemStream;

    async fn list_items(
        &self,
        request: Request<pb::ListItemsRequest>,
    ) -> Result<Response<Self::ListItemsStream>, Status> {
        self.record(request.metadata());
        let count = request.get_ref().count.min(MAX_LISTED_ITEMS);
        let items = tokio_stream::iter((1..=count).map(listed_item));
        Ok(Response::new(Box::pin(items)))
    }

    async fn last_call(&self, _request: Request<()>) -> Result<Response<pb::CallSeen>, Status> {
        let seen = self.lock().last_call.clone();
        Ok(Response::new(seen))
    }

    async fn upload_items(
        &self,
        request: Request<Streaming<pb::Item>>,
    ) -> Result<Response<pb::Item>, Status> {
        self.record(request.metadata());
        let mut items = request.into_inner();
        let mut last = pb::Item::default();
        while let Some(item) = items.message().await? {
            last = item;
        }
        Ok(Response::new(last))
    }
}

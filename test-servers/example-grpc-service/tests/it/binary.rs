//! The `example-grpc-service` binary: it announces its address on stderr and
//! serves there.

use std::{
    io::{BufRead as _, BufReader},
    process::{Child, Command, Stdio},
};

use switchboard_example_grpc_service::{
    SEEDED_ITEM_ID,
    inventory::v1::{GetItemRequest, inventory_client::InventoryClient},
};

/// The child process, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_binary_prints_its_url_and_serves_there() {
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_example-grpc-service"))
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts"),
    );
    let stderr = child.0.stderr.take().expect("stderr is piped");
    let mut line = String::new();
    BufReader::new(stderr)
        .read_line(&mut line)
        .expect("stderr is readable");
    let url = line
        .trim_end()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("not an announcement: {line:?}"))
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let mut client = InventoryClient::connect(url)
        .await
        .expect("the binary accepts connections");
    let item = client
        .get_item(GetItemRequest { id: SEEDED_ITEM_ID })
        .await
        .expect("the seeded item")
        .into_inner();
    assert_eq!(item.name, "anvil");
    drop(child);
}

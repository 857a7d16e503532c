//! What only the SQLite store has: the read budget enforced by the progress handler, and a
//! file (and folder) created on first use.

use std::sync::Arc;
use std::time::Duration;

use yetibot_ai_commands::{HistoryToolError, history_count_tool};
use yetibot_history::{HistoryFilter, HistoryStore, StoreError};
use yetibot_history_store::{SqliteOptions, SqliteStore, TablePrefix};

use crate::fixture::{Folder, said, slack, sqlite_path};

#[tokio::test]
async fn a_read_past_its_budget_is_interrupted_and_nothing_partial_is_returned() {
    let folder = Folder::new();
    let path = sqlite_path(&folder);
    let prefix = TablePrefix::default();
    let roomy = SqliteStore::open(&path, &prefix, SqliteOptions::default())
        .await
        .expect("open");
    let a = slack("#a");
    let records = (0..5000)
        .map(|n| said(&a, "ann", &format!("row {n}")))
        .collect::<Vec<_>>();
    for chunk in records.chunks(64) {
        roomy.append(chunk.to_vec()).await.expect("append");
    }
    let scope = a.history_scope();
    assert_eq!(
        roomy.count(&scope, &HistoryFilter::default()).await,
        Ok(5000)
    );
    // The same file with no time for reads at all.
    let hurried = Arc::new(
        SqliteStore::open(
            &path,
            &prefix,
            SqliteOptions {
                read_timeout: Duration::ZERO,
                ..SqliteOptions::default()
            },
        )
        .await
        .expect("open"),
    );
    assert_eq!(
        hurried.count(&scope, &HistoryFilter::default()).await,
        Err(StoreError::TimedOut)
    );
    assert_eq!(
        history_count_tool(hurried.as_ref(), &a, r#"{"query":"row"}"#).await,
        Err(HistoryToolError::Store(StoreError::TimedOut))
    );
    assert_eq!(
        HistoryToolError::Store(StoreError::TimedOut).to_string(),
        "history is unavailable: the database query took too long and was stopped"
    );
    // Writes are not reads: they still go through.
    hurried
        .append(vec![said(&a, "ann", "late")])
        .await
        .expect("append");
    assert_eq!(
        roomy.count(&scope, &HistoryFilter::default()).await,
        Ok(5001)
    );
}

#[tokio::test]
async fn the_file_and_its_folder_are_created_on_first_use() {
    let folder = Folder::new();
    let path = folder.path.join("deep").join("er").join("bot.db");
    SqliteStore::open(&path, &TablePrefix::default(), SqliteOptions::default())
        .await
        .expect("open");
    assert!(path.is_file());
}

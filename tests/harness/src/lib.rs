//! ZooKeeper test harness (placeholder)

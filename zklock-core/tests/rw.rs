//! The read/write lock against a real ZooKeeper: sharing, exclusion, FIFO
//! fairness (no writer starvation), downgrade, refused upgrade, reentrancy.

#![allow(clippy::unwrap_used)] // tests assert by panicking

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{connect, queue, server, wait_until};
use zklock_core::{AcquireOptions, ErrorKind, LockOptions, NodeKind, Owner};

const SEC: Duration = Duration::from_secs(1);

#[test]
fn readers_share_writers_exclude_and_later_readers_queue_behind_a_writer() {
    let zk = server();
    let hosts = zk.connect_string();
    let clients: Vec<_> = (0..4).map(|_| connect(&hosts)).collect();
    let r1 = clients[0].read_lock("/rw/fifo").unwrap().acquire(Some(5 * SEC)).unwrap();
    let r2 = clients[1].read_lock("/rw/fifo").unwrap().acquire(Some(5 * SEC)).unwrap();
    let p = clients[0].participants("/rw/fifo").unwrap();
    assert!(p.iter().all(|p| p.kind == NodeKind::Reader && p.holds), "{p:?}");
    assert!(p.iter().all(|p| p.name.contains("-__READ__")), "{p:?}");
    // A writer waits for the readers ...
    let w = Arc::new(clients[2].write_lock("/rw/fifo").unwrap());
    assert!(w.try_acquire().unwrap().is_none());
    let wl = w.clone();
    let writer = std::thread::spawn(move || wl.acquire(Some(20 * SEC)).unwrap());
    wait_until("writer queued", 5 * SEC, || queue(&clients[0], "/rw/fifo").len() == 3);
    assert!(queue(&clients[0], "/rw/fifo")[2].contains("-__WRIT__"));
    // ... and a reader arriving after the waiting writer waits for it (FIFO).
    let r3 = Arc::new(clients[3].read_lock("/rw/fifo").unwrap());
    assert!(r3.try_acquire().unwrap().is_none(), "a later reader must not overtake a queued writer");
    let rl = r3.clone();
    let reader = std::thread::spawn(move || rl.acquire(Some(20 * SEC)).unwrap());
    wait_until("late reader queued", 5 * SEC, || queue(&clients[0], "/rw/fifo").len() == 4);
    drop(r1);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!writer.is_finished(), "writer granted while a reader still holds");
    drop(r2);
    let gw = writer.join().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!reader.is_finished(), "reader granted while the writer holds");
    gw.release().unwrap();
    reader.join().unwrap().check().unwrap();
}

#[test]
fn writers_do_not_starve_under_a_steady_stream_of_readers() {
    let zk = server();
    let hosts = zk.connect_string();
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    // Four readers that overlap all the time: at every instant some reader
    // holds, so a writer that let later readers pass would never get in.
    let readers: Vec<_> = (0..4)
        .map(|i| {
            let (hosts, stop, reads) = (hosts.clone(), stop.clone(), reads.clone());
            std::thread::spawn(move || {
                let c = connect(&hosts);
                let lock = c.read_lock("/rw/starve").unwrap();
                std::thread::sleep(Duration::from_millis(30 * i));
                while !stop.load(Ordering::SeqCst) {
                    let g = lock.acquire(Some(30 * SEC)).unwrap();
                    reads.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(120));
                    drop(g);
                }
            })
        })
        .collect();
    wait_until("readers running", 10 * SEC, || reads.load(Ordering::SeqCst) >= 8);
    let c = connect(&hosts);
    let w = c.write_lock("/rw/starve").unwrap();
    for _ in 0..3 {
        let start = Instant::now();
        let g = w.acquire(Some(10 * SEC)).expect("the writer gets in despite the readers");
        let p = c.participants("/rw/starve").unwrap();
        assert!(p.iter().filter(|p| p.holds).count() == 1 && p[0].kind == NodeKind::Writer, "{p:?}");
        eprintln!("writer waited {:?} behind a stream of readers", start.elapsed());
        drop(g);
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::SeqCst);
    for r in readers {
        r.join().unwrap();
    }
}

#[test]
fn upgrade_is_refused_and_downgrade_keeps_writers_out() {
    let zk = server();
    let hosts = zk.connect_string();
    let (a, b) = (connect(&hosts), connect(&hosts));
    let rw = a.read_write_lock("/rw/grade", LockOptions::default()).unwrap();

    // Upgrade: refused at once with a clear error, nothing left behind.
    let r = rw.read_lock().acquire(Some(5 * SEC)).unwrap();
    let start = Instant::now();
    let e = rw.write_lock().acquire(Some(5 * SEC)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldDeadlock);
    assert!(e.message().contains("upgrade"), "{e}");
    assert!(start.elapsed() < SEC);
    assert_eq!(queue(&a, "/rw/grade").len(), 1);
    drop(r);

    // Downgrade: hold write, take read (at once: the thread that holds the
    // write side; or Guard::downgrade, below), release write.
    let w = rw.write_lock().acquire(Some(5 * SEC)).unwrap();
    let other_writer = Arc::new(b.write_lock("/rw/grade").unwrap());
    let ow = other_writer.clone();
    let t = std::thread::spawn(move || ow.acquire(Some(20 * SEC)).unwrap());
    wait_until("other writer queued", 5 * SEC, || queue(&a, "/rw/grade").len() == 2);
    let r = rw.read_lock().acquire(Some(Duration::ZERO)).expect("downgrade is immediate");
    let write_seq = w.sequence();
    assert_eq!(r.sequence(), write_seq, "the read node takes the write node's sequence");
    assert!(r.node_path().contains("-__READ__"));
    w.release().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(!t.is_finished(), "a writer got in while we still hold the downgraded read lock");
    // Another reader may share with us now.
    let br = b.read_lock("/rw/grade").unwrap();
    assert!(br.try_acquire().unwrap().is_none(), "FIFO: behind the queued writer");
    drop(r);
    t.join().unwrap().check().unwrap();
}

/// The pair's rules are the thread's (Curator's): another thread that
/// shares the pair waits like anyone else, and an explicit downgrade works
/// from anywhere, async too.
#[test]
fn downgrade_is_the_holding_threads_or_explicit() {
    let zk = server();
    let c = connect(&zk.connect_string());
    let (read, write) = c.read_write_lock("/rw/explicit", LockOptions::default()).unwrap().into_sides();
    let w = write.acquire(Some(5 * SEC)).unwrap();
    let r2 = read.clone();
    let other = std::thread::spawn(move || r2.acquire(Some(SEC / 2)).map(drop)).join().unwrap();
    assert_eq!(other.unwrap_err().kind(), ErrorKind::Timeout, "another thread was let in as a downgrade");
    let r = futures_executor::block_on(w.downgrade_async()).unwrap();
    assert_eq!(r.sequence(), w.sequence());
    assert!(r.node_path().contains("-__READ__"));
    w.release().unwrap();
    r.check().unwrap();
    let e = r.downgrade().map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "a read guard cannot downgrade: {e}");
    let plain = c.write_lock("/rw/plain").unwrap().acquire(Some(5 * SEC)).unwrap();
    assert_eq!(plain.downgrade().map(drop).unwrap_err().kind(), ErrorKind::InvalidArgument);
    drop((r, plain));
    assert!(queue(&c, "/rw/explicit").is_empty());
}

/// The pair's rules go by the acquire's owner: async acquires of one
/// owner of its own making (a task's) get the refused upgrade and the
/// implicit downgrade a thread gets; without an owner they get neither;
/// a blocking acquire may name an owner too.
#[test]
fn the_pairs_rules_go_by_the_owner_async_too() {
    let zk = server();
    let c = connect(&zk.connect_string());
    let (read, write) = c.read_write_lock("/rw/owner", LockOptions::default()).unwrap().into_sides();
    let task = Owner::new();
    let of_task = |t: Duration| AcquireOptions::new().timeout(Some(t)).owner(task);
    let r = futures_executor::block_on(read.acquire_async(of_task(5 * SEC))).unwrap();
    let e = futures_executor::block_on(write.acquire_async(of_task(5 * SEC))).map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldDeadlock, "the task's upgrade: {e}");
    assert_eq!(queue(&c, "/rw/owner").len(), 1, "nothing queued by the refused upgrade");
    // The thread is not the task: its blocking upgrade queues and times out.
    let e = write.acquire(SEC / 2).map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "the thread is not the task: {e}");
    drop(r);
    let w = write.acquire(of_task(5 * SEC)).unwrap();
    let e = futures_executor::block_on(read.acquire_async(Duration::ZERO)).map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "no owner: no implicit downgrade");
    let r = futures_executor::block_on(read.acquire_async(of_task(Duration::ZERO))).expect("the task's downgrade");
    assert_eq!(r.sequence(), w.sequence(), "the read node takes the write node's sequence");
    drop((w, r));
    assert!(queue(&c, "/rw/owner").is_empty());
}

#[test]
fn each_side_is_reentrant_per_thread_when_asked() {
    let zk = server();
    let c = connect(&zk.connect_string());
    let rw = c.read_write_lock("/rw/reenter", LockOptions::default().reentrant()).unwrap();
    let w1 = rw.write_lock().acquire(None).unwrap();
    let w2 = rw.write_lock().acquire(None).unwrap();
    assert_eq!(w1.node_path(), w2.node_path());
    drop(w1);
    assert!(rw.write_lock().is_held());
    drop(w2);
    let r1 = rw.read_lock().acquire(None).unwrap();
    let r2 = rw.read_lock().acquire(None).unwrap();
    assert_eq!(r1.node_path(), r2.node_path());
    assert_eq!(queue(&c, "/rw/reenter").len(), 1);
    drop((r1, r2));
    assert!(queue(&c, "/rw/reenter").is_empty());
}

#[test]
fn mixed_readers_and_writers_never_overlap_wrongly() {
    let zk = server();
    let hosts = zk.connect_string();
    let readers_in = Arc::new(AtomicUsize::new(0));
    let writers_in = Arc::new(AtomicUsize::new(0));
    let max_readers = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (hosts, readers_in, writers_in, max_readers) =
                (hosts.clone(), readers_in.clone(), writers_in.clone(), max_readers.clone());
            std::thread::spawn(move || {
                let c = connect(&hosts);
                let writer = i % 4 == 0;
                let lock = if writer { c.write_lock("/rw/mixed") } else { c.read_lock("/rw/mixed") }.unwrap();
                for _ in 0..8 {
                    let g = lock.acquire(Some(60 * SEC)).unwrap();
                    if writer {
                        assert_eq!(writers_in.fetch_add(1, Ordering::SeqCst), 0, "two writers");
                        assert_eq!(readers_in.load(Ordering::SeqCst), 0, "writer with readers");
                    } else {
                        let n = readers_in.fetch_add(1, Ordering::SeqCst) + 1;
                        max_readers.fetch_max(n, Ordering::SeqCst);
                        assert_eq!(writers_in.load(Ordering::SeqCst), 0, "reader with a writer");
                    }
                    std::thread::sleep(Duration::from_millis(15));
                    if writer {
                        writers_in.fetch_sub(1, Ordering::SeqCst);
                    } else {
                        readers_in.fetch_sub(1, Ordering::SeqCst);
                    }
                    g.release().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(max_readers.load(Ordering::SeqCst) >= 2, "readers never shared");
    eprintln!("max simultaneous readers: {}", max_readers.load(Ordering::SeqCst));
}

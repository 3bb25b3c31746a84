//! A kube-rs reflector per resource, as an application runs one: `watcher(api, config)` with
//! kube's default backoff, reflected into a `Store`.
//!
//! ```text
//! kube-rs-informer --kubeconfig FILE [--namespace NS] [--resources configmaps,pods] [--streaming-lists]
//! ```
//!
//! Without `--streaming-lists` the watcher runs with `watcher::Config::default()` (LIST, then
//! WATCH from the list's resourceVersion, bookmarks on); with it, `Config::default()
//! .streaming_lists()` (one WATCH with sendInitialEvents=true, the watch-list). Without
//! `--namespace` it watches all namespaces.
//!
//! Prints one JSON line per event on stdout, with kube's own event names:
//! `{"event":"Init|InitApply|InitDone|Apply|Delete","resource":"configmaps","key":"ns/name","rv":"123","mono":1234.5}`
//! (`key`/`rv` only for events with an object), `{"event":"synced","resource":...,"count":N}`
//! once a store is ready (the first InitDone), `{"event":"error","resource":...,"message":...}`
//! for every error the watcher yields (it then recovers by itself), and
//! `{"request":{"method":"GET","uri":"/api/v1/...?..."}}` for every request the client sends.
//! "mono" is CLOCK_MONOTONIC in seconds, the clock of Python's time.monotonic(). The stdin line
//! "dump" answers `{"dump":{"configmaps":{"ns/name":"rv"},...}}` from the stores. SIGTERM (or the
//! end of stdin) stops the watchers, prints `{"event":"stopped"}` and exits 0.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Mutex;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::client::{Body, ClientBuilder};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Config, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::signal::unix::{SignalKind, signal};

static OUT: Mutex<()> = Mutex::new(());

/// CLOCK_MONOTONIC in seconds.
fn mono() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes only into the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn out(mut line: Value) {
    line["mono"] = json!(mono());
    let _one_at_a_time = OUT.lock().unwrap_or_else(|e| e.into_inner());
    println!("{line}"); // stdout is line-buffered
}

fn key<K: ResourceExt>(o: &K) -> String {
    match o.namespace() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{}", o.name_any()),
        _ => o.name_any(),
    }
}

fn state<K: Resource<DynamicType = ()> + Clone + ResourceExt>(store: &Store<K>) -> BTreeMap<String, String> {
    store.state().iter().map(|o| (key(o.as_ref()), o.resource_version().unwrap_or_default())).collect()
}

/// Runs one reflector until the task is aborted, printing its events.
async fn reflect<K>(api: Api<K>, config: watcher::Config, resource: &'static str, writer: reflector::store::Writer<K>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let reader = writer.as_reader();
    let stream = watcher::watcher(api, config).default_backoff().reflect(writer);
    let mut stream = std::pin::pin!(stream);
    let mut synced = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => {
                let (name, object) = match &event {
                    Event::Init => ("Init", None),
                    Event::InitApply(o) => ("InitApply", Some(o)),
                    Event::InitDone => ("InitDone", None),
                    Event::Apply(o) => ("Apply", Some(o)),
                    Event::Delete(o) => ("Delete", Some(o)),
                };
                let mut line = json!({"event": name, "resource": resource});
                if let Some(o) = object {
                    line["key"] = json!(key(o));
                    line["rv"] = json!(o.resource_version().unwrap_or_default());
                }
                out(line);
                if !synced && matches!(event, Event::InitDone) {
                    synced = true;
                    out(json!({"event": "synced", "resource": resource, "count": reader.state().len()}));
                }
            }
            Err(e) => out(json!({"event": "error", "resource": resource, "message": e.to_string()})),
        }
    }
}

fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

fn usage(message: &str) -> ! {
    eprintln!("{message}\nusage: kube-rs-informer --kubeconfig FILE [--namespace NS] [--resources configmaps,pods] [--streaming-lists]");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let mut kubeconfig = None;
    let mut namespace = None;
    let mut resources = "configmaps".to_string();
    let mut streaming_lists = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--streaming-lists" => streaming_lists = true,
            "--kubeconfig" => kubeconfig = args.next(),
            "--namespace" => namespace = args.next(),
            "--resources" => resources = args.next().unwrap_or_else(|| usage("--resources needs a value")),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    let kubeconfig = kubeconfig.unwrap_or_else(|| usage("--kubeconfig FILE is required"));
    let kubeconfig = Kubeconfig::read_from(&kubeconfig).unwrap_or_else(|e| usage(&format!("{kubeconfig}: {e}")));
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| usage(&format!("kubeconfig: {e}")));
    // The client's own stack, with an outermost layer that only observes each request.
    let log = tower::util::MapRequestLayer::new(|request: http::Request<Body>| {
        out(json!({"request": {"method": request.method().as_str(), "uri": request.uri().to_string()}}));
        request
    });
    let client = ClientBuilder::try_from(config)
        .unwrap_or_else(|e| usage(&format!("client: {e}")))
        .with_layer(&log)
        .build();
    let watcher_config = if streaming_lists {
        watcher::Config::default().streaming_lists()
    } else {
        watcher::Config::default()
    };

    let mut tasks = Vec::new();
    let mut dumps: Vec<(&'static str, Box<dyn Fn() -> BTreeMap<String, String> + Send>)> = Vec::new();
    for resource in resources.split(',') {
        match resource {
            "configmaps" => {
                let (reader, writer) = reflector::store::<ConfigMap>();
                let api = api::<ConfigMap>(&client, namespace.as_deref());
                tasks.push(tokio::spawn(reflect(api, watcher_config.clone(), "configmaps", writer)));
                dumps.push(("configmaps", Box::new(move || state(&reader))));
            }
            "pods" => {
                let (reader, writer) = reflector::store::<Pod>();
                let api = api::<Pod>(&client, namespace.as_deref());
                tasks.push(tokio::spawn(reflect(api, watcher_config.clone(), "pods", writer)));
                dumps.push(("pods", Box::new(move || state(&reader))));
            }
            _ => usage(&format!("unknown resource {resource} (configmaps, pods)")),
        }
    }

    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        tokio::select! {
            _ = term.recv() => break,
            line = lines.next_line() => match line {
                Ok(Some(l)) if l.trim() == "dump" => {
                    let dump: serde_json::Map<String, Value> =
                        dumps.iter().map(|(name, state)| (name.to_string(), json!(state()))).collect();
                    out(json!({"dump": dump}));
                }
                Ok(Some(_)) => {}
                _ => break, // end of stdin
            },
        }
    }
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        let _ = task.await;
    }
    out(json!({"event": "stopped"}));
    // tokio's stdin reader is a blocking thread that would hold the runtime's shutdown.
    std::process::exit(0);
}

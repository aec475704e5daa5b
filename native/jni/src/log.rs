//! Native log events to SLF4J: `tracing` events go to a queue, and one thread of ours hands
//! each to `io.streamshard.scheduler.NativeLog.log(int, String)` (attached to the JVM only for
//! that call, so it never keeps the JVM from exiting). Calling Java from the thread that logged
//! could re-enter the JVM from inside a JNI call; the queue keeps every call on its own frame.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Mutex;

use jni::objects::{JClass, JValue};
use jni::refs::Global;
use jni::{jni_sig, jni_str, AttachConfig, EnvUnowned, JavaVM};
use streamshard_status::log::{self, LogSink};
use tracing::Level;

/// Events waiting for the log thread; more are dropped (a flood of logs must not grow memory).
const QUEUE: usize = 1024;

struct ToJava {
    queue: Mutex<SyncSender<(i32, String)>>,
}

impl LogSink for ToJava {
    fn log(&self, level: Level, message: &str) {
        let code = match level {
            Level::ERROR => 40,
            Level::WARN => 30,
            Level::INFO => 20,
            _ => 10,
        };
        if let Ok(q) = self.queue.lock() {
            let _ = q.try_send((code, message.to_string()));
        }
    }
}

fn forward(
    vm: JavaVM,
    class: Global<JClass<'static>>,
    rx: std::sync::mpsc::Receiver<(i32, String)>,
) {
    for (level, message) in rx {
        let config = || {
            AttachConfig::new()
                .scoped(true)
                .thread_name(jni_str!("streamshard-native-log"))
        };
        let sent =
            vm.attach_current_thread_with_config(config, None, |env| -> jni::errors::Result<()> {
                let text = env.new_string(&message)?;
                env.call_static_method(
                    &class,
                    jni_str!("log"),
                    jni_sig!("(ILjava/lang/String;)V"),
                    &[JValue::Int(level), JValue::Object(&text)],
                )?;
                Ok(())
            });
        if sent.is_err() {
            eprintln!("io.streamshard {message}");
        }
    }
}

/// `NativeLog.install0(NativeLog.class)`: routes native log events to that class, once per
/// process (later calls do nothing).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeLog_install0<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    sink: JClass<'c>,
) {
    crate::entry::entry(env, |env| {
        let vm = env.get_java_vm()?;
        let class: Global<JClass<'static>> = env.new_global_ref(&sink)?;
        let (tx, rx) = sync_channel(QUEUE);
        if log::install(Box::new(ToJava {
            queue: Mutex::new(tx),
        })) {
            let started = std::thread::Builder::new()
                .name("streamshard-log".into())
                .spawn(move || forward(vm, class, rx));
            if let Err(e) = started {
                eprintln!("io.streamshard cannot start the native log thread: {e}");
            }
        }
        Ok(())
    })
}

//! JNI entry points of the status listener (`streamshard.status.listener`). All cold paths: start
//! and stop once per instance, and a push of Java's view from the instance's status thread.

use jni::objects::{JClass, JString};
use jni::sys::{jboolean, jlong, jstring};
use jni::EnvUnowned;
use streamshard_status::server::StatusServer;

use crate::entry::{entry, native, Thrown};

const POISONED: &str = "the status listener's lock is poisoned";

/// Starts the listener on `addr` and returns the address it listens on; a refused address or
/// bind throws `SchedulerException` with the reason (the caller logs it and runs on without).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_statusStart0<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    addr: JString<'c>,
    allow_remote: jboolean,
) -> jstring {
    entry(env, |env| {
        let n = native(h)?;
        let addr = addr.try_to_string(env)?;
        let mut slot = n
            .status
            .lock()
            .map_err(|_| Thrown::Scheduler(POISONED.into()))?;
        let local = match slot.as_ref() {
            Some(running) => running.local_addr().to_string(),
            None => {
                let server = StatusServer::start(&addr, allow_remote, n.scheduler.clone())
                    .map_err(Thrown::Scheduler)?;
                let local = server.local_addr().to_string();
                *slot = Some(server);
                local
            }
        };
        Ok(JString::from_str(env, local)?.into_raw())
    })
}

/// Replaces the listener's view of the instance with `json`; nothing if no listener is on.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_statusPush0<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    json: JString<'c>,
) {
    entry(env, |env| {
        let n = native(h)?;
        let json = json.try_to_string(env)?;
        let slot = n
            .status
            .lock()
            .map_err(|_| Thrown::Scheduler(POISONED.into()))?;
        if let Some(server) = slot.as_ref() {
            server.push(&json).map_err(Thrown::Scheduler)?;
        }
        Ok(())
    })
}

/// Stops the listener if one is on.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_statusStop0<'c>(
    env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
) {
    entry(env, |_| {
        if let Some(server) = native(h).ok().and_then(|n| n.status.lock().ok()?.take()) {
            server.stop();
        }
        Ok(())
    })
}

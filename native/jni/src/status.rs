//! JNI entry points of the status listener (`streamshard.status.listener`). All cold paths: start
//! and stop once per instance, and a push of Java's view from the instance's status thread.

use jni::errors::ThrowRuntimeExAndDefault;
use jni::objects::{JClass, JString};
use jni::sys::{jboolean, jlong, jstring};
use jni::EnvUnowned;
use streamshard_status::server::StatusServer;

use crate::{native, throw_msg};

/// Starts the listener on `addr` and returns the address it listens on; a refused address or
/// bind throws `SchedulerException` with the reason (the caller logs it and runs on without).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_statusStart0<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    addr: JString<'c>,
    allow_remote: jboolean,
) -> jstring {
    env.with_env(|env| -> jni::errors::Result<jstring> {
        let Some(n) = native(h) else {
            throw_msg(env, "the scheduler is closed (handle 0)".into());
            return Ok(std::ptr::null_mut());
        };
        let addr = addr.try_to_string(env)?;
        let Ok(mut slot) = n.status.lock() else {
            throw_msg(env, "the status listener's lock is poisoned".into());
            return Ok(std::ptr::null_mut());
        };
        if let Some(running) = slot.as_ref() {
            return Ok(JString::from_str(env, running.local_addr().to_string())?.into_raw());
        }
        match StatusServer::start(&addr, allow_remote, n.scheduler.clone()) {
            Ok(server) => {
                let local = server.local_addr().to_string();
                *slot = Some(server);
                Ok(JString::from_str(env, local)?.into_raw())
            }
            Err(e) => {
                throw_msg(env, e);
                Ok(std::ptr::null_mut())
            }
        }
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// Replaces the listener's view of the instance with `json`; nothing if no listener is on.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_statusPush0<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
    json: JString<'c>,
) {
    env.with_env(|env| -> jni::errors::Result<()> {
        let Some(n) = native(h) else {
            throw_msg(env, "the scheduler is closed (handle 0)".into());
            return Ok(());
        };
        let json = json.try_to_string(env)?;
        let pushed = match n.status.lock() {
            Ok(slot) => slot.as_ref().map(|s| s.push(&json)),
            Err(_) => Some(Err("the status listener's lock is poisoned".into())),
        };
        if let Some(Err(e)) = pushed {
            throw_msg(env, e);
        }
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// Stops the listener if one is on.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_streamshard_scheduler_NativeScheduler_statusStop0<'c>(
    mut env: EnvUnowned<'c>,
    _class: JClass<'c>,
    h: jlong,
) {
    env.with_env(|_env| -> jni::errors::Result<()> {
        if let Some(server) = native(h).and_then(|n| n.status.lock().ok()?.take()) {
            server.stop();
        }
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

//! What every entry point shares: the one error path and the handle lookup.
//!
//! An entry point is `entry(env, |env| { ... })`: its body returns `Result<T, Thrown>`, and
//! [`JavaPolicy`] turns an error into the Java exception of [`Thrown::java_class`] (the one table)
//! and a panic into a `java.lang.RuntimeException`, returning `T::default()` to Java, which sees
//! the pending exception. Nothing unwinds into the JVM: `EnvUnowned::with_env` catches panics.

use std::fmt;
use std::time::Duration;

use jni::errors::{ErrorPolicy, ThrowRuntimeExAndDefault};
use jni::objects::JLongArray;
use jni::strings::JNIStr;
use jni::strings::JNIString;
use jni::sys::{jint, jlong};
use jni::{jni_str, Env, EnvUnowned};
use streamshard_core::{Error, Scheduler, TaskHandle};

use crate::Native;

/// Why an entry point throws.
#[derive(Debug)]
pub(crate) enum Thrown {
    /// The scheduler refused: its error names the exception class.
    Core(Error),
    /// An argument out of its range (`IllegalArgumentException`).
    Argument(String),
    /// A count beyond an array's length (`ArrayIndexOutOfBoundsException`).
    Index(String),
    /// Anything else of ours (`SchedulerException`): a closed handle, a status listener error.
    Scheduler(String),
    /// The JNI call itself failed: a Java exception is usually pending already (it stays);
    /// otherwise a `RuntimeException` names the error.
    Jni(jni::errors::Error),
}

/// The message of a call on a handle `destroy` has freed (the Java side passes 0 then).
pub(crate) const CLOSED: &str = "the scheduler is closed (handle 0)";

impl Thrown {
    /// The one table: the Java exception class for each error.
    fn java_class(&self) -> &'static JNIStr {
        match self {
            Thrown::Core(Error::InvalidConfig { .. }) | Thrown::Argument(_) => {
                jni_str!("java/lang/IllegalArgumentException")
            }
            Thrown::Core(Error::TaskFailed(_)) => {
                jni_str!("io/streamshard/scheduler/TaskFailedException")
            }
            Thrown::Core(Error::DrainTimeout { .. }) => {
                jni_str!("io/streamshard/scheduler/DrainTimeoutException")
            }
            Thrown::Core(Error::Shutdown) => {
                jni_str!("io/streamshard/scheduler/SchedulerShutdownException")
            }
            Thrown::Index(_) => jni_str!("java/lang/ArrayIndexOutOfBoundsException"),
            Thrown::Core(_) | Thrown::Scheduler(_) | Thrown::Jni(_) => {
                jni_str!("io/streamshard/scheduler/SchedulerException")
            }
        }
    }
}

impl fmt::Display for Thrown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Thrown::Core(e) => write!(f, "{e}"),
            Thrown::Argument(m) | Thrown::Index(m) | Thrown::Scheduler(m) => f.write_str(m),
            Thrown::Jni(e) => write!(f, "JNI: {e}"),
        }
    }
}

impl std::error::Error for Thrown {}

impl From<Error> for Thrown {
    fn from(e: Error) -> Self {
        Thrown::Core(e)
    }
}

impl From<jni::errors::Error> for Thrown {
    fn from(e: jni::errors::Error) -> Self {
        Thrown::Jni(e)
    }
}

/// Throws `e` as its Java exception, unless one is pending already (a failed JNI call's own).
fn throw(env: &mut Env, e: &Thrown) {
    if env.exception_check() {
        return;
    }
    // If even throwing fails (class missing), a Java exception is pending all the same.
    let _ = env.throw_new(e.java_class(), JNIString::from(e.to_string()));
}

/// The error policy of every entry point: errors through [`Thrown::java_class`], panics as
/// `RuntimeException`s ("Rust panic: ..."), and `T::default()` back to Java.
pub(crate) struct JavaPolicy;

impl<T: Default> ErrorPolicy<T, Thrown> for JavaPolicy {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        err: Thrown,
    ) -> jni::errors::Result<T> {
        throw(env, &err);
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        payload: Box<dyn std::any::Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        <ThrowRuntimeExAndDefault as ErrorPolicy<T, Thrown>>::on_panic(env, cap, payload)
    }
}

/// Runs an entry point's body: see the module's documentation.
pub(crate) fn entry<'c, T: Default + 'c>(
    mut env: EnvUnowned<'c>,
    body: impl FnOnce(&mut Env<'c>) -> Result<T, Thrown>,
) -> T {
    env.with_env(body).resolve::<JavaPolicy>()
}

/// The state behind a handle from `create`.
///
/// The Java class owns the handle: it passes it only while open and calls `destroy` once, after
/// `shutdown` and after every thread that used it has stopped.
pub(crate) fn native<'a>(h: jlong) -> Result<&'a Native, Thrown> {
    // SAFETY: a non-zero handle is a pointer from `Box::into_raw` in `create` that `destroy`
    // has not freed yet (the Java owner's contract above).
    unsafe { (h as *const Native).as_ref() }.ok_or_else(|| Thrown::Scheduler(CLOSED.into()))
}

/// The scheduler behind a handle from `create`.
pub(crate) fn scheduler<'a>(h: jlong) -> Result<&'a Scheduler, Thrown> {
    native(h).map(|n| &*n.scheduler)
}

/// `v` if it is positive.
pub(crate) fn positive(name: &str, v: jint) -> Result<u32, Thrown> {
    u32::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| Thrown::Argument(format!("{name} must be positive, got {v}")))
}

/// `v` if it is not negative.
pub(crate) fn non_negative(name: &str, v: jint) -> Result<u32, Thrown> {
    u32::try_from(v).map_err(|_| Thrown::Argument(format!("{name} must not be negative, got {v}")))
}

/// `count` if it is not negative and at most `len` (the length of array `array`).
pub(crate) fn count_within(
    name: &str,
    count: jint,
    array: &str,
    len: usize,
) -> Result<usize, Thrown> {
    let count = non_negative(name, count)? as usize;
    if count > len {
        return Err(Thrown::Index(format!(
            "{name} {count} exceeds {array}.length {len}"
        )));
    }
    Ok(count)
}

/// A Java timeout in milliseconds (a negative one is 0).
pub(crate) fn millis(ms: jlong) -> Duration {
    Duration::from_millis(ms.max(0) as u64)
}

/// A Java timeout in nanoseconds (a negative one is 0).
pub(crate) fn nanos(ns: jlong) -> Duration {
    Duration::from_nanos(ns.max(0) as u64)
}

/// The first `count` task handles of a Java `long[]`.
pub(crate) fn task_handles(
    env: &mut Env,
    tasks: &JLongArray,
    count: usize,
) -> Result<Vec<TaskHandle>, Thrown> {
    let mut raw = vec![0 as jlong; count];
    tasks.get_region(env, 0, &mut raw)?;
    Ok(raw
        .iter()
        .map(|&t| TaskHandle::from_raw(t as u64))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_out_of_range_are_illegal_arguments() {
        assert_eq!(positive("n", 3).unwrap(), 3);
        for (result, message) in [
            (positive("n", 0), "n must be positive, got 0"),
            (positive("n", -1), "n must be positive, got -1"),
            (
                non_negative("slot", -2),
                "slot must not be negative, got -2",
            ),
        ] {
            let e = result.unwrap_err();
            assert!(matches!(e, Thrown::Argument(_)), "{e:?}");
            assert_eq!(e.to_string(), message);
            assert_eq!(
                e.java_class().to_str(),
                "java/lang/IllegalArgumentException"
            );
        }
        assert_eq!(non_negative("slot", 0).unwrap(), 0);
    }

    #[test]
    fn a_count_beyond_its_array_is_an_index_error() {
        assert_eq!(count_within("count", 2, "tasks", 2).unwrap(), 2);
        let e = count_within("count", 3, "tasks", 2).unwrap_err();
        assert_eq!(e.to_string(), "count 3 exceeds tasks.length 2");
        assert_eq!(
            e.java_class().to_str(),
            "java/lang/ArrayIndexOutOfBoundsException"
        );
        assert!(matches!(
            count_within("count", -1, "tasks", 2),
            Err(Thrown::Argument(_))
        ));
    }

    #[test]
    fn every_core_error_has_its_class() {
        let cases = [
            (
                Error::Shutdown,
                "io/streamshard/scheduler/SchedulerShutdownException",
            ),
            (
                Error::InvalidConfig {
                    name: "x",
                    reason: "bad".into(),
                },
                "java/lang/IllegalArgumentException",
            ),
        ];
        for (e, class) in cases {
            assert_eq!(Thrown::from(e).java_class().to_str(), class);
        }
        assert_eq!(
            Thrown::Scheduler(CLOSED.into()).java_class().to_str(),
            "io/streamshard/scheduler/SchedulerException"
        );
        assert!(matches!(native(0), Err(Thrown::Scheduler(m)) if m == CLOSED));
    }
}

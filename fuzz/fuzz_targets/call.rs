//! Fuzzes whole calls: any arguments text must produce a reply within the byte bound, and
//! preflight and execute must agree on whether the call fails.
#![no_main]

use yetibot_json_util::{Call, SplitMix64, execute, preflight};
use libfuzzer_sys::fuzz_target;
use yetibot_redaction::Secrets;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let secrets = Secrets::new(["sk-live-0123456789"]).expect("one secret compiles");
    let call = Call::new(text);
    let checked = preflight(std::slice::from_ref(&call), &secrets);
    let reply = execute(&call, &mut SplitMix64::new(data.len() as u64), &secrets);
    assert!(reply.as_json().len() <= yetibot_json_util::limits::MAX_REPLY_BYTES);
    assert_eq!(checked.err().map(|e| e.error()), reply.error());
});

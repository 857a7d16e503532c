//! Fuzzes the strict JSON reader: no input may panic, and every accepted value must write
//! back to text that reads as the same value and writes identically again.
#![no_main]

use yetibot_json_util::Value;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(value) = Value::parse(text) else {
        return;
    };
    let written = value.to_json();
    let again = Value::parse(&written).expect("written JSON reads back");
    assert_eq!(again, value, "the value survives a round trip");
    assert_eq!(again.to_json(), written, "writing is stable");
});

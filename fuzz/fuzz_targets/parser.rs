//! Fuzzes the command language's parser: no input may panic, every accepted line prints
//! back exactly as typed, and the printed line parses to the same tree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use yetibot_command::syntax;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(expr) = syntax::parse(line) else {
        return;
    };
    let printed = expr.to_line();
    assert_eq!(printed, line, "printing gives back the line as typed");
    assert_eq!(syntax::parse(&printed), Ok(expr), "the printed line parses the same");
});

//! A server started in the test process and a raw protocol client.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use txmem_server::{Server, ServerHandle, Settings};

/// A server on a free loopback port with `settings` (port and address
/// overridden).
pub fn start(settings: Settings) -> ServerHandle {
    Server::bind(Settings {
        port: 0,
        listen: "127.0.0.1".into(),
        ..settings
    })
    .expect("bind a loopback port")
    .spawn()
    .expect("start the server")
}

/// A server with the default settings and two threads.
pub fn start_default() -> ServerHandle {
    start(Settings {
        threads: 2,
        ..Settings::default()
    })
}

/// A connection speaking raw bytes.
pub struct Client {
    pub sock: TcpStream,
    /// Bytes received but not yet consumed by a read.
    pending: Vec<u8>,
}

impl Client {
    pub fn connect(h: &ServerHandle) -> Client {
        let sock = TcpStream::connect(h.addr).expect("connect");
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        sock.set_nodelay(true).unwrap();
        Client {
            sock,
            pending: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).expect("send");
    }

    /// Reads up to and including the first occurrence of `end`; what
    /// arrived after it is kept for the next read.
    pub fn read_until(&mut self, end: &[u8]) -> Vec<u8> {
        let mut buf = [0u8; 64 * 1024];
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(at) = self.pending.windows(end.len()).position(|w| w == end) {
                let rest = self.pending.split_off(at + end.len());
                return std::mem::replace(&mut self.pending, rest);
            }
            assert!(
                Instant::now() < deadline,
                "timed out; got {:?}",
                String::from_utf8_lossy(&self.pending)
            );
            let n = self.sock.read(&mut buf).expect("read");
            assert!(
                n > 0,
                "closed; got {:?}",
                String::from_utf8_lossy(&self.pending)
            );
            self.pending.extend_from_slice(&buf[..n]);
        }
    }

    /// Reads exactly `n` bytes.
    pub fn read_exact(&mut self, n: usize) -> Vec<u8> {
        let mut buf = [0u8; 64 * 1024];
        while self.pending.len() < n {
            let got = self.sock.read(&mut buf).expect("read");
            assert!(
                got > 0,
                "closed; got {:?}",
                String::from_utf8_lossy(&self.pending)
            );
            self.pending.extend_from_slice(&buf[..got]);
        }
        let rest = self.pending.split_off(n);
        std::mem::replace(&mut self.pending, rest)
    }

    /// Sends `req` and asserts the reply is exactly `expect`.
    pub fn expect(&mut self, req: &[u8], expect: &[u8]) {
        self.send(req);
        let got = self.read_exact(expect.len());
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expect),
            "reply to {:?}",
            String::from_utf8_lossy(req)
        );
    }

    /// Sends `req` and returns one reply line (up to and including `\r\n`).
    pub fn line(&mut self, req: &[u8]) -> String {
        self.send(req);
        String::from_utf8(self.read_until(b"\r\n")).unwrap()
    }

    /// `stats [group]` as name/value pairs.
    pub fn stats(&mut self, group: &str) -> Vec<(String, String)> {
        let req = if group.is_empty() {
            "stats\r\n".to_string()
        } else {
            format!("stats {group}\r\n")
        };
        self.send(req.as_bytes());
        let text = String::from_utf8(self.read_until(b"END\r\n")).unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix("STAT "))
            .filter_map(|l| l.rsplit_once(' '))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// One `stats` value as a number.
    pub fn stat(&mut self, group: &str, name: &str) -> u64 {
        self.stats(group)
            .into_iter()
            .find(|(k, _)| k == name)
            .unwrap_or_else(|| panic!("no stat {name}"))
            .1
            .parse()
            .unwrap()
    }

    /// True once the server has closed the connection.
    pub fn closed(&mut self) -> bool {
        if !self.pending.is_empty() {
            return false;
        }
        let mut b = [0u8; 1];
        matches!(self.sock.read(&mut b), Ok(0))
    }
}

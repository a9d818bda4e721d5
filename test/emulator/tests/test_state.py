"""The cluster's description (picoemu_lib.state) and the catalog generated from it
(picoemu_lib.sqlgen.catalog): the pgproto addresses it advertises."""

import json
import unittest
from typing import List, Tuple

from picoemu_lib import state as emu_state
from picoemu_lib.sqlgen.catalog import catalog_doc


class AdvertisedAddressTest(unittest.TestCase):
    """The pgproto address the catalog gives: the front's port, or with `up --advertise-private`
    the instance's private PostgreSQL port (no server needed: the state and the catalog document)."""

    def addresses(self, advertise_private: bool) -> Tuple[List[str], List[int], List[emu_state.Inst]]:
        st = emu_state.new_state("/nonexistent/state.json", 20000, [("default", 1, 2, 10)], False,
                                 "scram-sha-256", advertise_private=advertise_private)
        tier = st.tier("default")
        rs = st.new_replicaset(tier)
        insts = [st.new_instance(rs, tier, j) for j in (1, 2)]
        rs["master"] = insts[0]["name"]
        doc = json.loads(catalog_doc(st))
        pgproto = [p["address"] for p in doc["_pico_peer_address"] if p["connection_type"] == "pgproto"]
        return pgproto, [st.advertised_port(i) for i in insts], insts

    def test_default_advertises_the_fronts(self) -> None:
        pgproto, ports, insts = self.addresses(False)
        self.assertEqual(ports, [20000, 20001])
        self.assertEqual(pgproto, ["127.0.0.1:20000", "127.0.0.1:20001"])
        self.assertEqual([i["port"] for i in insts], [20200, 20201])

    def test_advertise_private(self) -> None:
        pgproto, ports, insts = self.addresses(True)
        self.assertEqual(ports, [20200, 20201])
        self.assertEqual(pgproto, ["127.0.0.1:20200", "127.0.0.1:20201"])
        self.assertEqual([i["pgproto_port"] for i in insts], [20000, 20001])  # the fronts

"""The generator's output is frozen: the same seed and size give byte-identical programs.

docs/findings.md and the expected-failure files quote campaigns by seed, so a refactoring of
the generator (or of the statement kinds and the op table it draws from) must not change a
single byte of what it draws. These digests were taken before the generator was restructured;
a deliberate change to what is drawn must bump the generator version and record new digests,
never edit these silently.

Both back-ends are covered: RandomChooser (`gradspec run`, by seed) and Hypothesis (pytest,
derandomized: the examples depend on the pinned Hypothesis version and on the source of the
drawing functions below, which therefore must not be edited either; literals in the source of
imported modules are not drawn, as under the derandomized profiles).
"""
from __future__ import annotations

import functools
import hashlib

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conformance.generate import ALL_CAPABILITIES
from conformance.generate import generate as _generate
from conformance.generate import program_for_seed as _program_for_seed
from conformance.generate import programs as _programs
from conformance.pytest_plugin import _without_local_constants
from conformance.strategies import HypothesisChooser

# The digests below are of generator vocabulary 1, frozen: newer vocabularies add ops and so
# draw other programs; a seed drawn at vocabulary 1 must still give the same program.
VOCABULARY = 1
generate = functools.partial(_generate, vocabulary=VOCABULARY)
program_for_seed = functools.partial(_program_for_seed, vocabulary=VOCABULARY)
programs = functools.partial(_programs, vocabulary=VOCABULARY)

# Capability sets the built-in and test engines declare: everything, the compiled engine's,
# the Paddle adapter's, and a bare core engine.
CAPS = {
    "all": ALL_CAPABILITIES,
    "no-grad_fn": tuple(c for c in ALL_CAPABILITIES if c not in ("grad_fn", "node_hooks")),
    "no-views-inplace": tuple(c for c in ALL_CAPABILITIES
                              if c not in ("views", "inplace", "version_counter")),
    "core": ("core",),
}

# (capabilities, size, first seed, count) -> sha256 of the programs' JSON, one per line.
RANDOM_DIGESTS = {
    ("all", 20, 0, 300):
        "9cb3ed4e590831a66a8b1326b413f66242a50735859dcbcf8c3d8700e77bca3d",
    ("all", 13, 1000, 200):
        "926be191c29af39bb44e832e49190e6dae4b3027c26ea5009126e03a39930e64",
    ("all", 40, 5000, 100):
        "db16c9cdc31632430f1aaf92e41c6cab20bf1bbb5181bafbd6c5510bf1c25e68",
    ("no-grad_fn", 20, 0, 200):
        "30bf276465779da1b3b6ebd75baa4af46f72b4513dff2162a9bf56e50b5e4bf4",
    ("no-views-inplace", 20, 0, 200):
        "c19622abc8c88b254bf3c5bf377083e4bfe6c565a0eba7dccff68e037f74025f",
    ("core", 20, 0, 100):
        "a0b760bdbc7b630777baa704f87ecd64ccc7b2bb66ac19cf27d5c0eb04859ab9",
}
# Vocabulary 3 (`gradspec run`'s before vocabulary 4), recorded at f4c6622 before the ops of
# vocabulary 4 were drawn: the capability deriv_ops means nothing to it and changes nothing.
VOCABULARY_3_DIGESTS = {
    ("all", 20, 0, 150):
        "944e9def4cc8b16311c0d09560c7fae3af87f91a384afebd67106b3daacabf9f",
    ("all", 40, 3000, 50):
        "69315c0f35af1531f8b63dfe743be8721554d1e0d0d90c7c11bc2c24dfadd7ac",
    ("no-grad_fn", 20, 0, 100):
        "489e65b413151430af223c967abfc9ff1bd6f55f3d1e5cb9010fbcb3305dfe46",
    ("core", 20, 0, 100):
        "d4bf6d0883f04b110ba767d669e8ab4e6b55c8d04613f0ea0436675e9fc07912",
}
# Vocabulary 4 (`gradspec run`'s before vocabulary 5), recorded at 6c7e846 before the
# create_graph draws of vocabulary 5: the capability create_graph changes nothing in it.
VOCABULARY_4_DIGESTS = {
    ("all", 20, 0, 150):
        "53d7ed27210c33ea08742d182f8536471f093c298903b2c79c6aaaf9c6869cea",
    ("all", 40, 3000, 50):
        "4a08e6a2d99a177f30c80bfb72cbf1bcbfb97065d9894dcf9adf911ee99a8d6f",
    ("no-grad_fn", 20, 0, 100):
        "8ac959de9597a2ea306549b822cadb1816c35ebbf2a8364743f6f5d1966f88b4",
    ("core", 20, 0, 100):
        "3522662f9b6a9db6c3efcbb5374e2bb44a2fcabcb15fed27dcf70119347368d2",
}
# Vocabulary 6 (`gradspec run`'s before vocabulary 7), recorded at d055362 before narrow and
# select were drawn: the capability narrow_select changes nothing in it.
VOCABULARY_6_DIGESTS = {
    ("all", 20, 0, 150):
        "94aa9de8982708789dea4589cf056abdd8e78e621b876a1859ec741a1137be77",
    ("all", 40, 3000, 50):
        "ea7f92411327e7574d1b08c573c15b3e6b137999da378e51d8adb25479dcf814",
    ("no-grad_fn", 20, 0, 100):
        "c5701466c1e007de57a3cd0ae996f3c19ced67ed024fb99a27cb13b515ee4e6e",
    ("core", 20, 0, 100):
        "a5db091e14843f9843eb4346fa20bed5af4c6463d1ff30770fb01b1ec50d8bea",
}
# Vocabulary 7 (`gradspec run`'s before vocabulary 8), recorded at dfad181 before the error
# move of MODE-11 was drawn.
VOCABULARY_7_DIGESTS = {
    ("all", 20, 0, 150):
        "228defb283bf101f90221c0128e41d0f38b96a2edf7bb8a5c1084bd3f763fab7",
    ("all", 40, 3000, 50):
        "ee2e22ddcb6e683ff7e2e187e3dc69f4c2cdffa0adcbdc1172efaf301579376f",
    ("no-grad_fn", 20, 0, 100):
        "0559861b002468e4f00b8e9cc875b0be69c543dd134dc2f156c10edbb3cfca6f",
    ("core", 20, 0, 100):
        "be7a833a44fe55c3827c706a242c3179b3be3f765a03e9a290a9b653a0fffec6",
}
# Vocabulary 8 (`gradspec run`'s before vocabulary 9), recorded at dfda162 before views and
# indexing were drawn more often.
VOCABULARY_8_DIGESTS = {
    ("all", 20, 0, 150):
        "b7ed6b19f5cd5a4e08fb34d4342743b92a82a0c0f45be3cdb06a2220866512ce",
    ("all", 40, 3000, 50):
        "a9ab96899a59f5805801472b3d7f97b9a5616f720e3395f2b4e7c412dae70ed4",
    ("no-grad_fn", 20, 0, 100):
        "94ee9c549eb18775fbe89376147b302f03b0c239c4330e98df11b665db5bfe90",
    ("core", 20, 0, 100):
        "c550d1b11044a969eec1693cd4cf2eb07c668b7a81c2c194a8396184a43f2cc0",
}
# Vocabulary 9 (`gradspec run`'s before vocabulary 10), recorded at d3443bf before more forms
# of three errors were drawn.
VOCABULARY_9_DIGESTS = {
    ("all", 20, 0, 150):
        "34d01beb74c7ee9a67ec98e6cb61f1e1259b3427044ae8648ac920cdd79dc819",
    ("all", 40, 3000, 50):
        "c49ebd0dd968b6a62636fc9fd8051a097273d46f633817a085c87d468b211d3a",
    ("no-grad_fn", 20, 0, 100):
        "8bec237b713c589acf0694f5c44e93ac31928561f89721d81c05fefd89e3fee5",
    ("core", 20, 0, 100):
        "914405fa2750d972d040bc791bf9fe193fa9fb3c0f4543f5955ec7cf7c354454",
}
# Vocabulary 10 (`gradspec run`'s before vocabulary 11), recorded at ba0d1c5 before views of
# non-contiguous and 3-d views, empty narrows, tensors of more than 256 elements and node hooks
# over an undefined gradient were drawn.
VOCABULARY_10_DIGESTS = {
    ("all", 20, 0, 150):
        "b4ced27731eb506644f6189b6a220cf41f3cc5ebeca1636d17dbd3a11f446f8a",
    ("all", 40, 3000, 50):
        "eb054a0826dc5df727f2d5c9effededa78ee479b878751d22233615807b002a8",
    ("no-grad_fn", 20, 0, 100):
        "33e2cf4b7a27c07f3c6082fd03f4aa3ef7341a5e782416c48614a8f64672b3f7",
    ("core", 20, 0, 100):
        "e5a57dbd9fa61943f3a0abd317148fe20a55eaff5703a33d31b959ac943b56bd",
}
# Vocabulary 11 (`gradspec run`'s before vocabulary 12), recorded at d7442a9 before split,
# chunk and unbind were drawn.
VOCABULARY_11_DIGESTS = {
    ("all", 20, 0, 150):
        "cdf05653572af30d911a6e77ac3ee5835a77eda359cc9289221a18fe66d2999f",
    ("all", 40, 3000, 50):
        "0b0d4e729fa4480a6392712c8fb528d958d2f73daaac3b03d5a3c26c0c18a71c",
    ("no-grad_fn", 20, 0, 100):
        "f066df7491011e147efa2df835a703f338fc1c4b16f45a858337cf19882ecb37",
    ("core", 20, 0, 100):
        "d3b746f4c6e00701d72d0db7e95848766727ddff1dead9108a63fd4168b78def",
}
# Vocabulary 12 (`gradspec run`'s before vocabulary 13), recorded at 4375e0f before the
# layout scenarios of vocabulary 13 were drawn.
VOCABULARY_12_DIGESTS = {
    ("all", 20, 0, 150):
        "18501d4658224ec9f4cffc758f4621dad90bf5373efb36c52371f610c30c706b",
    ("all", 40, 3000, 50):
        "41a7f153672e55f8fbb92923b3fde2b4c0409be4aead5a03c6f79ddabee40820",
    ("no-grad_fn", 20, 0, 100):
        "9537aa704777eeb240dcdf5638f3d48b1f9f658af4302cf360a32ce3d78becdf",
    ("core", 20, 0, 100):
        "955f3fc53cd7de79d3bbe999d7bf5611b0a24c16b82db0f27df1b971525452d4",
}
# Vocabulary 13 (`gradspec run`'s before vocabulary 14), recorded at 90f67e0 before the
# multi_grad_hook statement was drawn.
VOCABULARY_13_DIGESTS = {
    ("all", 20, 0, 150):
        "50ea39a72f1c8fee4fc90c6349f6ab31aaae5eac393be48578c64053a4d776e0",
    ("all", 40, 3000, 50):
        "6c6e13bbe129e757cc0f6f4905a79264802dbb0d5b1a10cdabcec734c56f1150",
    ("no-grad_fn", 20, 0, 100):
        "818b3ecf69f42f614c047be4241fce678e97260352f38d138891ae732969eeb0",
    ("core", 20, 0, 100):
        "a71b0cb245cdf66e7497108b8f5a00a59a8966d8b45d75b70506e468e4f61240",
}
# Vocabulary 14 (`gradspec run`'s before vocabulary 15), recorded at b2085f9 before the
# scenarios of vocabulary 15 were drawn.
VOCABULARY_14_DIGESTS = {
    ("all", 20, 0, 150):
        "d7ecd9c08d67f532bf477591c90ddba223f9031ffe1c2781f9879a49492dfed4",
    ("all", 40, 3000, 50):
        "e188f4c092e1f92d556ae7f444456031ffe408dacde173799858eff0a41f91de",
    ("no-grad_fn", 20, 0, 100):
        "35df5c4c0d6caec0c8271acc3ecf0dd84522a6d48a6ae6d230fa37fbd2a76cc3",
    ("core", 20, 0, 100):
        "140f815cb77c871e3c90ed852ee09f5d18a81d8d006bba40e9992ae8e7df6d61",
}
# Vocabulary 15 (`gradspec run`'s before vocabulary 16), recorded at a1d613b before grad_dtype,
# the requires_grad setter and the scenarios of vocabulary 16 were drawn.
VOCABULARY_15_DIGESTS = {
    ("all", 20, 0, 150):
        "3343954cb0f55cd1b2968266841a09700ad00135e317fae5574a3d846ce83d30",
    ("all", 40, 3000, 50):
        "a99874b67fe42f4c8b7825eccfd4c8ebd55d12980f88e84dd9922143d05237d3",
    ("no-grad_fn", 20, 0, 100):
        "5cb595586464679f40637116d2d45421beb1fee7c8ef73dcdfbd8e0307e846d5",
    ("core", 20, 0, 100):
        "bc70a84ae6513f107dcbf78f30663130eb4d564258a577d61422d56c6be4ef7f",
}
# Vocabulary 16 (`gradspec run`'s before vocabulary 17), recorded at 8c1812f before `.data =`
# was drawn.
VOCABULARY_16_DIGESTS = {
    ("all", 20, 0, 150):
        "74194bd07331a4d4a2f498b894083c44722b22c193f88b8bea2930b3459aa478",
    ("all", 40, 3000, 50):
        "154738764ca11438be46b1993c4c9ddc64aa741706247ee03f4ee4c7f70e1414",
    ("no-grad_fn", 20, 0, 100):
        "c3851113c77a74f1c19a7cae6774a94673dbd4800718b9748fd54d39019d8840",
    ("core", 20, 0, 100):
        "434fda79ae10427a1c81083f1f2b32b3bdeb96c40262233e6023cf22d4c4c312",
}
# Vocabulary 17 (`gradspec run`'s before vocabulary 18), recorded at f6d0c16 before
# saved-tensor hooks were drawn.
VOCABULARY_17_DIGESTS = {
    ("all", 20, 0, 150):
        "6ace0334b31b9e327e711ac6c2f7758ed5e58581d496d769ab2bbb34425881c5",
    ("all", 40, 3000, 50):
        "ceb2f6e884a4147ea5c60590b7bd40e18afd6051ac9096687ba1e6aa1c7fccb1",
    ("no-grad_fn", 20, 0, 100):
        "3fb2d593298bf71e93eca474cdf9a9a4fa9ce5b49851bccf40184a30a4a59787",
    ("core", 20, 0, 100):
        "ed3ca5e7e3b9caa3b9be0efe0ee4d1595415dae1ae48356081e854ebc66b91c9",
}
# Vocabulary 18 (`gradspec run`'s before vocabulary 19), recorded at d4699d0 before custom
# Functions were drawn.
VOCABULARY_18_DIGESTS = {
    ("all", 20, 0, 150):
        "f8d90b593f5db750bdac6ca9d757261c2f9640a11e81ed0f6cb8dd9e9f8a63e6",
    ("all", 40, 3000, 50):
        "028753ff83e3b6ddaa0f52a7bad19b4da29430c6a98f6a390973bda3b66bd885",
    ("no-grad_fn", 20, 0, 100):
        "7cfd1d15c23a7620cddc54107d264b7dc21a8ef58b9a8bad3f636c813b899c47",
    ("core", 20, 0, 100):
        "1da7be073032d28b7ad28a456f6acfe982a3d1e7ff12e41ddc14a52acb63aac6",
}
# Vocabulary 19 (`gradspec run`'s before vocabulary 20), recorded at 89706fc before detach_(),
# set_() and nested or disabled saved-tensor hooks were drawn.
VOCABULARY_19_DIGESTS = {
    ("all", 20, 0, 150):
        "8faa211557bcd82e3990d08eedae4310b90883a19b0f41af000d9878d3226357",
    ("all", 40, 3000, 50):
        "fb5cd78d3409ffb731e9641b898b539cd0da3012fc7fb2047d401babe1b5ab88",
    ("no-grad_fn", 20, 0, 100):
        "8164fc6bbc6d4acdeca34b77e333ba3352efbf8bb0a23afbec73fdea66aad9df",
    ("core", 20, 0, 100):
        "365c17605966d2eee1a7550e84aa68e3be1ed8df9fd08a3ddee81ea6bb45a42a",
}
VOCABULARY_20_DIGESTS = {
    ("all", 20, 0, 150):
        "bc72cb37fb6f322b3e05c3ba78b934bf0a062bc5679c73a1eb240abd25cfe6c9",
    ("all", 40, 3000, 50):
        "8fc47d15447e9e29bb64c71089868bee41576fda7b0e37661c91399e0613c190",
    ("no-grad_fn", 20, 0, 100):
        "9e57b949c77b839d5aab29f2120a18dfdcb13f7641e3b7b407482f697d9fc3ba",
    ("core", 20, 0, 100):
        "c1ea9a3b551e10c2331caec4a83cb03ae1a9d85438d3f5e41f267c266e57ea35",
}
# Vocabulary 21 (`gradspec run`'s before vocabulary 22), recorded at 4b6ee27 before the nodes
# of recorded .grads and Module.zero_grad were drawn.
VOCABULARY_21_DIGESTS = {
    ("all", 20, 0, 150):
        "c8bdc298f1afaecf417f001d738aa50ceac156b39ca2b946a8a64f310d9a3712",
    ("all", 40, 3000, 50):
        "c6448516973ca5dc0f1a1ddb3660ea2bab619d73ed27dea2e99d099ec8dc1101",
    ("no-grad_fn", 20, 0, 100):
        "73c43dde22a3c469b217fd4cf9ee4072752823869ccf6bd3e2a9eb96443a5d0f",
    ("core", 20, 0, 100):
        "4a7f86666b6aadc8b799bb0c2b41839b2f8b1a3c7dca7d77bdcc6f7ceb9ca7a5",
}

HYPOTHESIS_DIGESTS = {
    "strategy": "9104a13644978665bf7b6a3f4dc92ccaed363cd10786fdf649b0a0c7c021bbf7",
    "labelled": "c003b34754cc40220262b3dc168e50d19a2bb724186558a4dc6b5a55e30df3e2",
}


def digest(texts) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode())
        h.update(b"\n")
    return h.hexdigest()


def random_digest(caps: str, size: int, first: int, count: int, vocabulary: int = VOCABULARY
                  ) -> str:
    return digest(_program_for_seed(s, CAPS[caps], size, vocabulary=vocabulary).dumps()
                  for s in range(first, first + count))


@pytest.mark.parametrize("key", list(RANDOM_DIGESTS), ids=lambda k: "-".join(map(str, k)))
def test_random_programs_are_unchanged(key):
    assert random_digest(*key) == RANDOM_DIGESTS[key]


# Each vocabulary that was once `gradspec run`'s, frozen: its digests above.
FROZEN = {3: VOCABULARY_3_DIGESTS, 4: VOCABULARY_4_DIGESTS, 6: VOCABULARY_6_DIGESTS,
          7: VOCABULARY_7_DIGESTS, 8: VOCABULARY_8_DIGESTS,
          9: VOCABULARY_9_DIGESTS, 10: VOCABULARY_10_DIGESTS,
          11: VOCABULARY_11_DIGESTS, 12: VOCABULARY_12_DIGESTS,
          13: VOCABULARY_13_DIGESTS, 14: VOCABULARY_14_DIGESTS, 15: VOCABULARY_15_DIGESTS,
          16: VOCABULARY_16_DIGESTS, 17: VOCABULARY_17_DIGESTS, 18: VOCABULARY_18_DIGESTS,
          19: VOCABULARY_19_DIGESTS, 20: VOCABULARY_20_DIGESTS, 21: VOCABULARY_21_DIGESTS}


@pytest.mark.parametrize("vocabulary, key", [(v, k) for v, keys in FROZEN.items() for k in keys],
                         ids=lambda x: "-".join(map(str, x)) if isinstance(x, tuple) else
                         f"vocabulary-{x}")
def test_frozen_vocabulary_programs_are_unchanged(vocabulary, key):
    assert random_digest(*key, vocabulary=vocabulary) == FROZEN[vocabulary][key]


_SETTINGS = dict(max_examples=60, derandomize=True, database=None, deadline=None,
                 phases=[Phase.generate], suppress_health_check=list(HealthCheck))


def hypothesis_digest(which: str) -> str:
    # Hypothesis also draws literals found in the source of imported modules: moving code
    # would change the draws. The derandomized profiles turn that off, and so does this test.
    _without_local_constants()
    drawn: list[str] = []
    if which == "strategy":
        @settings(**_SETTINGS)
        @given(programs(ALL_CAPABILITIES, 20))
        def collect(p):
            drawn.append(p.dumps())
    else:
        @settings(**_SETTINGS)
        @given(st.data())
        def collect(data):
            drawn.append(generate(HypothesisChooser(data), ALL_CAPABILITIES, 15).dumps())
    collect()
    return digest(drawn)


@pytest.mark.parametrize("which", list(HYPOTHESIS_DIGESTS))
def test_hypothesis_programs_are_unchanged(which):
    assert hypothesis_digest(which) == HYPOTHESIS_DIGESTS[which]


if __name__ == "__main__":      # prints the current digests, to record a deliberate change
    for key in RANDOM_DIGESTS:
        print(key, random_digest(*key))
    for key in VOCABULARY_3_DIGESTS:
        print(key, "vocabulary 3", random_digest(*key, vocabulary=3))
    for which in HYPOTHESIS_DIGESTS:
        print(which, hypothesis_digest(which))

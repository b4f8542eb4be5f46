package qris

// crcTable is CRC-16/CCITT-FALSE's table: polynomial 0x1021, MSB first.
var crcTable = func() [256]uint16 {
	var t [256]uint16
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 is CRC-16/CCITT-FALSE (polynomial 0x1021, initial value 0xFFFF, no
// reflection, no final XOR) of data's bytes, the checksum of tag 63. For a
// payload it is computed over everything up to and including "6304". Its
// check value, CRC16("123456789"), is 0x29B1.
func CRC16(data string) uint16 {
	crc := uint16(0xFFFF)
	for i := 0; i < len(data); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^data[i]]
	}
	return crc
}
